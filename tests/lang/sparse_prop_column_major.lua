-- Random operations on a column-major layout: pointer(ji, {4, 2}) -> dense(ji, {4, 8})
-- (j listed first); indices stay x[i][j], so the field's shape is (16, 16).
package.path = "lib/?.lua;" .. package.path
local lt = require "lattice"
local driver = require "sparse_driver"
lt.init {}
local cnt, sum = lt.field(lt.i32, {}), lt.field(lt.i64, {})
local x = lt.field(lt.i32)
local blk = lt.root:pointer(lt.ji, { 4, 2 })
blk:dense(lt.ji, { 4, 8 }):place(x)
assert(x.shape[1] == 16 and x.shape[2] == 16, "shape " .. x.shape[1] .. "x" .. x.shape[2])
for _, seed in ipairs { 41, 42 } do
  driver.run({ name = "column-major pointer->dense", shape = { 16, 16 }, levels = { { block = { 8, 4 }, handle = blk } },
    x = x, cnt = cnt, sum = sum }, seed, 1500, 150)
end
print("sparse_prop_column_major: ok")
