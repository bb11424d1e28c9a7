-- error: field_shape_readonly.lua:5: x.shape of field 'rho' is read-only
local lt = require "lattice"
local g = lt.tree { fields = { rho = lt.f32 }, lt.dense(lt.i, 8) { "rho" } }:instantiate()
local rho = g.rho
rho.shape = { 16 }
