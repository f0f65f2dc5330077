#!/usr/bin/env python3
"""Peer for bench/softmax_regression_bench.cpp: scipy.optimize.minimize(method='trust-ncg') on the
same sparse softmax regression instance, with an efficient numpy gradient and Hessian
(H = (A^T * m) @ A + rank-2 terms, one pass per quantity, cached per x).

Usage (Debian's python3 with python3-scipy and numpy):
  build/bench/softmax_regression_bench --export /tmp/srbench 1
  /usr/bin/python3 bench/peers/scipy_trust_ncg.py /tmp/srbench [--repeat 3]

Prints, per repetition: total seconds, iterations, final |grad|, final |x - x*|, and the time at
which |x - x*| <= 1e-6 was first observed (from the per-iteration callback, which this script
times out of the total).
"""
import argparse
import json
import time

import numpy as np
from scipy.optimize import minimize


class Loss:
    """L = 1/2 |f - b|^2 + alpha + 1/2 |w . (A x)|^2 with f = softmax(A x), u = exp(A x)."""

    def __init__(self, A, b, w):
        self.A, self.b, self.w2 = A, b, w * w
        self.x = None

    def _at(self, x):
        if self.x is not None and np.array_equal(x, self.x):
            return
        self.x = x.copy()
        z = self.A @ x
        u = np.exp(z)
        f = np.exp(z - z.max())
        f /= f.sum()
        self.z, self.u, self.f, self.c = z, u, f, f - self.b

    def fun(self, x):
        self._at(x)
        return 0.5 * self.c @ self.c + self.u.sum() + 0.5 * self.w2 @ (self.z * self.z)

    def jac(self, x):
        self._at(x)
        f, c = self.f, self.c
        v = f * c - (f @ c) * f + self.u + self.w2 * self.z
        return self.A.T @ v

    def hess(self, x):
        self._at(x)
        A, f, c, b = self.A, self.f, self.c, self.b
        g = (2 * f - b) * f
        m = g - (c @ f) * f + self.u + self.w2
        H = (A.T * m) @ A
        af, ag = A.T @ f, A.T @ g
        H += ((3 * f - 2 * b) @ f) * np.outer(af, af) - np.outer(ag, af) - np.outer(af, ag)
        return H


def run_once(A, b, w, x0, x_star, gtol, maxiter, target):
    loss = Loss(A, b, w)
    state = {"hit": None, "callback_time": 0.0}
    start = time.perf_counter()

    def callback(xk, *args):
        t0 = time.perf_counter()
        if state["hit"] is None and np.linalg.norm(xk - x_star) <= target:
            state["hit"] = t0 - start - state["callback_time"]
        state["callback_time"] += time.perf_counter() - t0

    res = minimize(loss.fun, x0, jac=loss.jac, hess=loss.hess, method="trust-ncg",
                   callback=callback, options={"gtol": gtol, "maxiter": maxiter})
    total = time.perf_counter() - start - state["callback_time"]
    return {
        "seconds": total,
        "seconds_to_target": state["hit"],
        "iterations": int(res.nit),
        "final_gradient": float(np.linalg.norm(loss.jac(res.x))),
        "final_distance": float(np.linalg.norm(res.x - x_star)),
        "success": bool(res.success),
        "message": str(res.message),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gtol", type=float, default=1e-10)
    ap.add_argument("--maxiter", type=int, default=200)
    ap.add_argument("--target", type=float, default=1e-6)
    args = ap.parse_args()
    load = lambda name: np.load(f"{args.dir}/{name}.npy")
    A, b, w, x0, x_star = (load(k) for k in ("A", "b", "w", "x0", "x_star"))
    print(f"scipy {__import__('scipy').__version__}, numpy {np.__version__}, n = {A.shape[0]}, "
          f"d = {A.shape[1]}")
    for _ in range(args.repeat):
        print(json.dumps(run_once(A, b, w, x0, x_star, args.gtol, args.maxiter, args.target)))


if __name__ == "__main__":
    main()
