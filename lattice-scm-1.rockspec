-- lattice-scm-1.rockspec -- builds the Lua module lattice.so with CMake and
-- installs it into a LuaRocks tree for the user's Lua 5.4 (docs/install.md):
--     luarocks --lua-version 5.4 make            (from this folder)
-- The module carries its standard library and runtime inside it; it needs
-- LLVM 19 (llvm-config, clang, llvm-link) and libpng at build time, as the
-- main build does (setup.sh lists the Debian packages). LT_LUA_MODULE_ONLY
-- builds the module alone, against the headers of the Lua that luarocks
-- names, and installs it into the rock's lib folder, which luarocks deploys
-- to the tree's lib/lua/5.4. Lattice is not on a rocks server: `source` is
-- this checkout, so use `luarocks make` here rather than `luarocks install`.
rockspec_format = "3.0"
package = "lattice"
version = "scm-1"
source = {
  url = ".",
}
description = {
  summary = "Sparse and dense computation in Lua, JIT-compiled with LLVM for CPUs and NVIDIA GPUs",
  detailed = [[
Kernels are plain Lua functions, traced into Lattice's IR, compiled with
LLVM 19 and run in parallel on the CPU's cores or on an NVIDIA GPU, over
dense fields and hierarchical sparse trees (dense, bitmasked, pointer and
dynamic levels).]],
}
dependencies = {
  "lua >= 5.4, < 5.5",
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    LT_LUA_MODULE_ONLY = "ON",
    LT_INSTALL_LUADIR = "$(LIBDIR)",
    LUA_INCDIR = "$(LUA_INCDIR)",
  },
}
