-- error: sparse_tree_placed_twice.lua:3: lt.tree: field 'rho' is placed twice
local lt = require "lattice"
local Grid = lt.tree {
  fields = { rho = lt.f32 },
  lt.pointer(lt.ij, 8) { lt.dense(lt.ij, 4) { "rho" } },
  lt.dense(lt.ij, 32) { "rho" },
}
