// The subevict executable: subcommands are registered in commands.hpp; every failure becomes a
// one-line "subevict: error: ..." on stderr and exit code 2: a bad value of an option (one CLI11
// could not convert or a validator refused) as any other bad input. Other usage errors (an unknown
// or missing option) keep CLI11's message and exit code.
#include <exception>
#include <iostream>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"subevict: executable theory of KV-cache eviction"};
  try {
    app.require_subcommand(1);
    app.set_version_flag("--version", "subevict 0.1.0");
    subevict::cli::add_workload_command(app);
    subevict::cli::add_verify_command(app);
    subevict::cli::add_optimum_command(app);
    subevict::cli::add_regress_command(app);
    subevict::cli::add_simulate_command(app);
    subevict::cli::add_allocate_command(app);
    subevict::cli::add_sweep_command(app);
    app.parse(argc, argv);
  } catch (const CLI::ValidationError& e) {
    std::cerr << "subevict: error: " << e.what() << "\n";
    return 2;
  } catch (const CLI::ConversionError& e) {
    std::cerr << "subevict: error: " << e.what() << "\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "subevict: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
