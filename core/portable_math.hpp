#pragma once
/// \file
/// Elementary functions evaluated with +, -, *, / and sqrt only, in a fixed order, so that every
/// backend (g++ on the CPU, nvcc on the GPU) returns the same bits for the same input. Library
/// log/sin/cos differ between glibc and CUDA's libdevice by an ulp here and there, which would break
/// the bit-identical workloads promise; these replacements trade a few nanoseconds for that
/// guarantee. Accuracy: relative error below 4e-16 on the documented domains. Requires that the
/// compiler does not contract a*b+c into FMA (-ffp-contract=off, nvcc --fmad=false).

#include <cstdint>
#include <cmath>
#include <cstring>

#if defined(__CUDACC__)
#define SUBEVICT_HD __host__ __device__
#else
#define SUBEVICT_HD
#endif

namespace subevict::portable {

/// Natural logarithm for x in [2^-1022, 2^1023] (normal, positive, finite doubles).
SUBEVICT_HD inline double log(double x) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int exponent = int((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;  // mantissa m in [1, 2)
  double m;
  std::memcpy(&m, &bits, sizeof m);
  if (m > 1.4142135623730951) {  // centre the reduced argument: m in (sqrt(1/2), sqrt(2)]
    m = m * 0.5;
    exponent += 1;
  }
  // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716: the series to s^23 is exact to 1 ulp.
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double series = 1.0 / 23.0;
  series = series * s2 + 1.0 / 21.0;
  series = series * s2 + 1.0 / 19.0;
  series = series * s2 + 1.0 / 17.0;
  series = series * s2 + 1.0 / 15.0;
  series = series * s2 + 1.0 / 13.0;
  series = series * s2 + 1.0 / 11.0;
  series = series * s2 + 1.0 / 9.0;
  series = series * s2 + 1.0 / 7.0;
  series = series * s2 + 1.0 / 5.0;
  series = series * s2 + 1.0 / 3.0;
  series = series * s2 + 1.0;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // upper bits of ln 2 (exact times int)
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double e = double(exponent);
  return e * kLn2Hi + (e * kLn2Lo + 2.0 * s * series);
}

/// sin(2 pi u) and cos(2 pi u) for u in [0, 1).
SUBEVICT_HD inline void sincos_2pi(double u, double* sine, double* cosine) {
  // Quarter-turn reduction is exact: n in {0..4}, r = u - n/4 in [-1/8, 1/8].
  double turns = u * 4.0 + 0.5;
  const int quarter = int(turns);  // u >= 0, so truncation is floor
  const double r = u - double(quarter) * 0.25;
  constexpr double kTwoPi = 6.28318530717958647692;
  const double phi = kTwoPi * r;  // |phi| <= pi/4
  const double p2 = phi * phi;
  // Taylor series to phi^19 (sin) and phi^18 (cos); the next terms are below 1e-17.
  double sn = -1.0 / 121645100408832000.0;
  sn = sn * p2 + 1.0 / 355687428096000.0;
  sn = sn * p2 - 1.0 / 1307674368000.0;
  sn = sn * p2 + 1.0 / 6227020800.0;
  sn = sn * p2 - 1.0 / 39916800.0;
  sn = sn * p2 + 1.0 / 362880.0;
  sn = sn * p2 - 1.0 / 5040.0;
  sn = sn * p2 + 1.0 / 120.0;
  sn = sn * p2 - 1.0 / 6.0;
  sn = sn * p2 + 1.0;
  sn = sn * phi;
  double cs = 1.0 / 6402373705728000.0;
  cs = cs * p2 - 1.0 / 20922789888000.0;
  cs = cs * p2 + 1.0 / 87178291200.0;
  cs = cs * p2 - 1.0 / 479001600.0;
  cs = cs * p2 + 1.0 / 3628800.0;
  cs = cs * p2 - 1.0 / 40320.0;
  cs = cs * p2 + 1.0 / 720.0;
  cs = cs * p2 - 1.0 / 24.0;
  cs = cs * p2 + 0.5;
  cs = 1.0 - cs * p2;
  switch (quarter & 3) {
    case 0: *sine = sn; *cosine = cs; break;
    case 1: *sine = cs; *cosine = -sn; break;
    case 2: *sine = -sn; *cosine = -cs; break;
    default: *sine = -cs; *cosine = sn; break;
  }
}

}  // namespace subevict::portable
