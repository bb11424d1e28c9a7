-- error: composite_struct_member.lua:8: struct{mass, pos} has no member 'vel' (members: mass, pos)
local lt = require "lattice"
local P = lt.struct { pos = lt.vec2, mass = lt.f32 }
local ps = lt.field(P, 4)
local k = lt.kernel(function()
  for i in lt.ndrange(4) do
    local p = ps[i]
    p.vel = lt.vec2(0, 0)
  end
end)
k()
