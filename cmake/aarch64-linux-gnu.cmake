# Cross-compiling for linux-arm64 (GH200/GB200's Grace CPUs) on an x64 machine with Debian's
# toolchain: g++-aarch64-linux-gnu, libc6-arm64-cross, libstdc++6-arm64-cross. Used by the
# prebuild (scripts/node-gyp-cmake.mjs) and the arm64 core tests (scripts/arm64-tests.mjs).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
