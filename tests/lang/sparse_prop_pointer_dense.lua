-- Random operations on pointer(ij, 4) -> dense(ij, 8), checked against a Lua model.
package.path = "lib/?.lua;" .. package.path
local lt = require "lattice"
local driver = require "sparse_driver"
lt.init {}
local cnt, sum = lt.field(lt.i32, {}), lt.field(lt.i64, {})
local x = lt.field(lt.i32)
local blk = lt.root:pointer(lt.ij, 4)
blk:dense(lt.ij, 8):place(x)
for _, seed in ipairs { 1, 2, 3 } do
  driver.run({ name = "pointer->dense", shape = { 32, 32 }, levels = { { block = { 8, 8 }, handle = blk } },
    x = x, cnt = cnt, sum = sum }, seed, 1500, 150)
end
print("sparse_prop_pointer_dense: ok")
