-- Random operations on pointer(ij, 2) -> pointer(ij, 4) -> dense(ij, 4), including
-- deactivating cells of the outer pointer through its handle.
package.path = "lib/?.lua;" .. package.path
local lt = require "lattice"
local driver = require "sparse_driver"
lt.init {}
local cnt, sum = lt.field(lt.i32, {}), lt.field(lt.i64, {})
local x = lt.field(lt.i32)
local outer = lt.root:pointer(lt.ij, 2)
local inner = outer:pointer(lt.ij, 4)
inner:dense(lt.ij, 4):place(x)
for _, seed in ipairs { 21, 22, 23 } do
  driver.run({ name = "pointer->pointer->dense", shape = { 32, 32 },
    levels = { { block = { 16, 16 }, handle = outer }, { block = { 4, 4 }, handle = inner } },
    x = x, cnt = cnt, sum = sum }, seed, 1500, 150)
end
print("sparse_prop_pointer_pointer: ok")
