# The third-party libraries the wattcal library links, found once here for the top-level project and
# for the Python module's build when it links a build's archives (python/CMakeLists.txt: their
# exported targets name these packages' targets).
find_package(Ceres 2.1 REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(OpenMP REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS filesystem iostreams system)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
# OpenSSL's crypto (SHA-256) and libcsv are linked statically, and {fmt}'s compiled part is built
# into wattcal_util (pipeline/util/fmt_impl.cc; its headers from the package), so that the
# executables (wattcal-capture above all, which is carried to bare GPU machines) need no library
# beyond the C and C++ runtimes.
set(OPENSSL_USE_STATIC_LIBS TRUE)
find_package(OpenSSL REQUIRED)
find_path(LIBCSV_INCLUDE_DIR csv.h REQUIRED)
find_library(LIBCSV_LIBRARY NAMES libcsv.a csv REQUIRED)
