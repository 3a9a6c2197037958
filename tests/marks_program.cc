// A user's program marked with include/wattcal/marks.h, for the tests of wattcal-capture --app
// (capture_recording_test.cc): `marks_program NAME SECONDS` idles 0.1 s (its start-up), marks one
// window NAME of SECONDS (a sleep), and exits 0 whatever the marks helper said, as a program that
// does not check Begin's result would.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "wattcal/marks.h"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    wattcal::marks::Window window(argv[1], [] {});
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[2])));
  }
  return 0;
}
