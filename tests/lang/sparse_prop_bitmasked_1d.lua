-- Random operations on a 1-D bitmasked(i, 100) field, checked against a Lua model.
package.path = "lib/?.lua;" .. package.path
local lt = require "lattice"
local driver = require "sparse_driver"
lt.init {}
local cnt, sum = lt.field(lt.i32, {}), lt.field(lt.i64, {})
local x = lt.field(lt.i32)
local blk = lt.root:bitmasked(lt.i, 100)
blk:place(x)
for _, seed in ipairs { 31, 32, 33 } do
  driver.run({ name = "bitmasked 1-D", shape = { 100 }, levels = { { block = { 1 }, handle = blk } },
    x = x, cnt = cnt, sum = sum }, seed, 2000, 200)
end
print("sparse_prop_bitmasked_1d: ok")
