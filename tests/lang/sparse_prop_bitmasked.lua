-- Random operations on bitmasked(ij, 16) -> dense(ij, 2), checked against a Lua model.
package.path = "lib/?.lua;" .. package.path
local lt = require "lattice"
local driver = require "sparse_driver"
lt.init {}
local cnt, sum = lt.field(lt.i32, {}), lt.field(lt.i64, {})
local x = lt.field(lt.i32)
local blk = lt.root:bitmasked(lt.ij, 16)
blk:dense(lt.ij, 2):place(x)
for _, seed in ipairs { 11, 12, 13 } do
  driver.run({ name = "bitmasked->dense", shape = { 32, 32 }, levels = { { block = { 2, 2 }, handle = blk } },
    x = x, cnt = cnt, sum = sum }, seed, 1500, 150)
end
print("sparse_prop_bitmasked: ok")
