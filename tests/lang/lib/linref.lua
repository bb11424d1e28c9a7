-- linref.lua -- plain-Lua matrix references for the composite tests: 1-based
-- tables of rows, double precision, written independently of the kernels'
-- linear algebra (stdlib/lattice/linalg.lua).
local M = {}

function M.matmul(p, q)
  local r = {}
  for i = 1, #p do
    r[i] = {}
    for j = 1, #q[1] do
      local s = 0
      for k = 1, #q do s = s + p[i][k] * q[k][j] end
      r[i][j] = s
    end
  end
  return r
end

function M.transpose(p)
  local r = {}
  for i = 1, #p[1] do r[i] = {} for j = 1, #p do r[i][j] = p[j][i] end end
  return r
end

-- the determinant of a 2x2 or 3x3 matrix, by cofactors
function M.det(m)
  if #m == 2 then return m[1][1] * m[2][2] - m[1][2] * m[2][1] end
  return m[1][1] * (m[2][2] * m[3][3] - m[2][3] * m[3][2]) - m[1][2] * (m[2][1] * m[3][3] - m[2][3] * m[3][1])
    + m[1][3] * (m[2][1] * m[3][2] - m[2][2] * m[3][1])
end

return M
