// What every stage's main shares: option groups, verbosity, and the mapping of
// outcomes to exit codes (STYLE.md house rule 6).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "seed_option.h"
#include "usecases/calibration_flags.h"
#include "usecases/sweep_flags.h"

namespace wattcal {

// The CLI11 bindings of the command-line structs of pipeline/usecases/ (CalibrationFlags,
// AccelWattchFlags: stage/calibration_flags.h), whose conversions live there.

// Adds --method, --solver, --loss, --loss-scale, --residual, --voltage-min/max,
// --max-iterations, --start-from-alternating, --threads, --default-core/mem-mhz,
// --keep-flagged and --power-limit-w.
void AddCalibrationOptions(CLI::App* app, CalibrationFlags* flags);

// Adds --bounds, --orderings, --no-paper-orderings, --prior, --prior-weight, --no-prior-start.
void AddAccelWattchOptions(CLI::App* app, AccelWattchFlags* flags);

// The names name_of(v) of `values`, what an enum flag accepts (CLI::IsMember).
template <typename Enum, typename NameOf>
std::vector<std::string> EnumNames(const std::vector<Enum>& values, NameOf name_of) {
  std::vector<std::string> names;
  for (Enum v : values) names.push_back(name_of(v));
  return names;
}

// The value of `values` named `text` (one of EnumNames: CLI::IsMember has checked it).
template <typename Enum, typename NameOf>
Enum EnumNamed(const std::string& text, const std::vector<Enum>& values, NameOf name_of) {
  for (Enum v : values) {
    if (text == name_of(v)) return v;
  }
  return values.front();
}

// Binds `flag` to `target`, an enum (or optional enum) field: CLI11 accepts the names name_of(v)
// of `values` and stores the enum when the command line is read.
template <typename Enum, typename Target, typename NameOf>
CLI::Option* BindEnumOption(CLI::App* app, const std::string& flag, Target* target,
                            const std::vector<Enum>& values, NameOf name_of,
                            const std::string& description) {
  return app
      ->add_option_function<std::string>(
          flag,
          [target, values, name_of](const std::string& text) {
            *target = EnumNamed(text, values, name_of);
          },
          description)
      ->check(CLI::IsMember(EnumNames(values, name_of)));
}

// Binds `flag` straight to an enum field of a stage's (library) options: CLI11 accepts the names
// name_of(v) of `values` (the library's one spelling of each, e.g. DvfsObjectiveName) and stores
// the enum when the command line is read; --help shows the names and the field's default.
template <typename Enum, typename NameOf>
CLI::Option* AddEnumOption(CLI::App* app, const std::string& flag, Enum* target,
                           const std::vector<Enum>& values, NameOf name_of,
                           const std::string& description) {
  return BindEnumOption(app, flag, target, values, name_of, description)
      ->default_str(name_of(*target));
}

// The same for a std::optional<Enum> field, which stays unset (the library's default for the
// other options applies) unless the flag is given.
template <typename Enum, typename NameOf>
CLI::Option* AddOptionalEnumOption(CLI::App* app, const std::string& flag,
                                   std::optional<Enum>* target, const std::vector<Enum>& values,
                                   NameOf name_of, const std::string& description) {
  return BindEnumOption(app, flag, target, values, name_of, description);
}

// The same for a std::vector<Enum> field: a comma-separated list of the names (or the flag
// repeated), stored in the order given.
template <typename Enum, typename NameOf>
CLI::Option* AddEnumListOption(CLI::App* app, const std::string& flag, std::vector<Enum>* target,
                               const std::vector<Enum>& values, NameOf name_of,
                               const std::string& description) {
  return app
      ->add_option_function<std::vector<std::string>>(
          flag,
          [target, values, name_of](const std::vector<std::string>& texts) {
            target->clear();
            for (const std::string& text : texts) {
              target->push_back(EnumNamed(text, values, name_of));
            }
          },
          description)
      ->delimiter(',')
      ->check(CLI::IsMember(EnumNames(values, name_of)));
}

// Adds --mape-ci student-t|normal-population-sd to `app` (the MAPE confidence interval).
void AddMapeCiOption(CLI::App* app, MapeCiMethod* method);

// Binds --sweep, --description, --constant or --p-const-w (excluding each other), and --out to
// `flags` (pipeline/usecases/sweep_flags.h: the inputs of wattcal-static and wattcal-idle).
void AddSweepWithConstantOptions(CLI::App* app, SweepWithConstantFlags* flags);

// Marks an option as a file the stage writes: `app.add_option("--out", path)->check(OutputFile())`.
// RunStageMain refuses, before the stage reads anything, an output (or the provenance record it leads)
// that is the same file as an input (an option checked CLI::ExistingFile / ExistingDirectory /
// ExistingPath, or a file inside such a directory), or the same path as another output.
CLI::Validator OutputFile();

// The check RunStageMain runs after parsing (exposed for tests): registers every input file
// (util/output.h RegisterInputFile), refuses the same file given twice to one repeatable input
// option, an output that is an input, and two outputs that are one path. OptionError.
void CheckOutputsAgainstInputs(CLI::App* app);

// Adds --quiet / --verbose to `app`.
void AddLoggingOptions(CLI::App* app);

// Adds --run-dir DIR (the run folder; util/output.h SetRunFolder) to a stage that has no
// --run-dir of its own, parses argv, checks outputs against inputs (CheckOutputsAgainstInputs),
// runs `body`, and maps the outcome to an exit code: CLI parse errors and OptionError -> 1,
// InputError -> 2, FitError -> 3.
int RunStageMain(CLI::App* app, int argc, char** argv, const std::function<int()>& body);

}  // namespace wattcal
