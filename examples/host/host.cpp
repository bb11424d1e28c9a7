// host.cpp -- a C++ program that uses Lattice through its C API
// (docs/embedding.md), with small RAII wrappers: a runtime whose errors become
// exceptions, and a host std::vector shared with kernels with no copy
// (lt_ndarray_wrap). A Lua script (the string below) defines and exports a
// kernel and a field; the program launches the kernel on its vectors, reads
// and writes the field, and checks everything against plain C++.
//
// Against an installed Lattice (docs/install.md), either
//     c++ -std=c++17 host.cpp $(pkg-config --cflags --libs lattice) -o host_cpp
// (add -Wl,-rpath,PREFIX/lib for a prefix the loader does not search), or
// CMake with this folder's CMakeLists.txt (find_package(Lattice)).
// Run: ./host_cpp [N]   (prints one line; exit status 0 when every result matches)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include <lattice_lua.h>   // lt_run_string; it includes lattice.h (both are extern "C")

namespace {

const char *const script = R"lua(
local lt = require "lattice"
lt.init {}

local heat, next_heat = lt.field(lt.f64, {64}), lt.field(lt.f64, {64})

-- y = a * x + y on the host's vectors; returns the sum of the new y (a reduction)
local saxpy_sum = lt.kernel(function(a, x, y)
  local s = lt.f64(0)
  for i in lt.ndrange(x.shape[1]) do
    y[i] = a * x[i] + y[i]
    s = s + lt.f64(y[i])
  end
  return s
end, { a = lt.f32, x = lt.ndarray_type(lt.f32, 1), y = lt.ndarray_type(lt.f32, 1) })

-- one explicit diffusion step of heat over the cells lo .. hi - 1 (two parallel loops, in order)
local diffuse = lt.kernel(function(r, lo, hi)
  for i in lt.ndrange({lo, hi}) do
    next_heat[i] = heat[i] + r * (heat[i - 1] - 2 * heat[i] + heat[i + 1])
  end
  for i in lt.ndrange({lo, hi}) do
    heat[i] = next_heat[i]
  end
end, { r = lt.f64, lo = lt.i32, hi = lt.i32 })

lt.export("saxpy_sum", saxpy_sum)
lt.export("diffuse", diffuse)
lt.export("heat", heat)
)lua";

struct lattice_error : std::runtime_error {
  lt_status status;
  lattice_error(lt_status st, const std::string &what) : std::runtime_error(what), status(st) {}
};

// One runtime; every failed call throws with lt_last_error's message.
class Runtime {
 public:
  explicit Runtime(const lt_runtime_config &cfg) { check(lt_runtime_create(&cfg, &rt_)); }
  ~Runtime() { lt_runtime_destroy(rt_); }
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  lt_runtime handle() const { return rt_; }
  void check(lt_status st) const {
    if (st != LT_OK) throw lattice_error(st, std::string(lt_status_name(st)) + ": " + lt_last_error(rt_));
  }
  void run(const char *source, const char *chunkname) { check(lt_run_string(rt_, source, chunkname)); }
  lt_kernel kernel(const char *name) const {
    lt_kernel k;
    check(lt_kernel_find(rt_, name, &k));
    return k;
  }
  lt_field field(const char *name) const {
    lt_field f;
    check(lt_field_find(rt_, name, &f));
    return f;
  }
  lt_value launch(lt_kernel k, std::initializer_list<lt_value> args) const {
    lt_value r;
    check(lt_kernel_launch(rt_, k, args.begin(), static_cast<int>(args.size()), &r));
    return r;
  }

 private:
  lt_runtime rt_{};
};

// A std::vector<float> that kernels see as a 1-D f32 ndarray (its own memory
// on the CPU). The vector must not reallocate while the array exists.
class SharedVector {
 public:
  SharedVector(const Runtime &rt, std::vector<float> &v) : rt_(rt) {
    int64_t n = static_cast<int64_t>(v.size());
    rt.check(lt_ndarray_wrap(rt.handle(), LT_F32, 1, &n, v.data(), v.size() * sizeof(float), on_release, &released_,
                             &nd_));
  }
  ~SharedVector() { lt_ndarray_release(rt_.handle(), nd_); }
  SharedVector(const SharedVector &) = delete;
  SharedVector &operator=(const SharedVector &) = delete;

  lt_value value() const { return lt_nd(nd_); }
  static int released() { return released_; }

 private:
  static void on_release(void *user, void *) { ++*static_cast<int *>(user); }
  static int released_;
  const Runtime &rt_;
  lt_ndarray nd_{};
};
int SharedVector::released_ = 0;

const int steps = 25;

int check_all(Runtime &rt, std::size_t n) {
  int bad = 0;
  rt.run(script, "=host.cpp script");
  const lt_kernel saxpy_sum = rt.kernel("saxpy_sum"), diffuse = rt.kernel("diffuse");
  const lt_field heat = rt.field("heat");

  // the kernel on the host's vectors; values exact in float and double, so
  // C++ and the kernel agree to the bit in any summation order
  std::vector<float> x(n), y(n), y_ref(n);
  for (std::size_t i = 0; i < n; i++) {
    x[i] = static_cast<float>(i % 512) * 0.25f;
    y[i] = y_ref[i] = static_cast<float>(i % 9);
  }
  {
    SharedVector xs(rt, x), ys(rt, y);
    const float a = -1.5f;
    lt_value r = rt.launch(saxpy_sum, {lt_float(a), xs.value(), ys.value()});
    double sum = 0;
    for (std::size_t i = 0; i < n; i++) {
      y_ref[i] = a * x[i] + y_ref[i];
      sum += y_ref[i];
    }
    for (std::size_t i = 0; i < n; i++)
      if (y[i] != y_ref[i] && bad++ < 5) std::fprintf(stderr, "host_cpp: y[%zu] = %g, C++ gives %g\n", i, y[i], y_ref[i]);
    if (r.kind != LT_VALUE_FLOAT || r.as.f != sum) {
      std::fprintf(stderr, "host_cpp: saxpy_sum returned %.17g, C++ gives %.17g\n", r.as.f, sum);
      bad++;
    }
  }  // both arrays released here: their callbacks ran
  if (SharedVector::released() != 2) {
    std::fprintf(stderr, "host_cpp: %d release callbacks ran, expected 2\n", SharedVector::released());
    bad++;
  }

  // the field: a hot spot written from C++, diffused by the kernel, read back whole
  std::vector<double> h(64, 0.0);
  h[20] = 100.0;
  h[40] = -50.0;
  const int64_t begin[1] = {0}, extent[1] = {64};
  rt.check(lt_field_write_box(rt.handle(), heat, begin, extent, 1, LT_F64, h.data(), h.size() * sizeof(double)));
  const double coeff = 0.25;
  for (int s = 0; s < steps; s++) {   // the kernel is compiled at the first launch, then reused
    rt.launch(diffuse, {lt_float(coeff), lt_int(1), lt_int(63)});
    std::vector<double> next = h;
    for (int i = 1; i < 63; i++) next[i] = h[i] + coeff * (h[i - 1] - 2 * h[i] + h[i + 1]);
    h = next;
  }
  std::vector<double> got(64);
  rt.check(lt_field_read_box(rt.handle(), heat, begin, extent, 1, LT_F64, got.data(), got.size() * sizeof(double)));
  for (int i = 0; i < 64; i++)   // (a compiler may fuse the multiply-add in C++: compare closely, not exactly)
    if (std::fabs(got[i] - h[i]) > 1e-12 * (1 + std::fabs(h[i])) && bad++ < 5)
      std::fprintf(stderr, "host_cpp: heat[%d] = %.17g, C++ gives %.17g\n", i, got[i], h[i]);

  // misuse throws with a message naming the call and the problem
  try {
    double v;
    const int64_t at[1] = {64};
    rt.check(lt_field_read(rt.handle(), heat, at, 1, LT_F64, &v));
    std::fprintf(stderr, "host_cpp: reading heat[64] did not fail\n");
    bad++;
  } catch (const lattice_error &e) {
    if (e.status != LT_ERROR_SHAPE || std::string(e.what()).find("heat") == std::string::npos) {
      std::fprintf(stderr, "host_cpp: reading heat[64]: %s\n", e.what());
      bad++;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char **argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 100000;
  if (n < 1) {
    std::fprintf(stderr, "usage: %s [N >= 1]\n", argv[0]);
    return 2;
  }
  lt_runtime_config cfg;
  lt_runtime_config_default(&cfg);
  try {
    Runtime rt(cfg);
    if (check_all(rt, static_cast<std::size_t>(n)) != 0) return 1;
  } catch (const lattice_error &e) {
    std::fprintf(stderr, "host_cpp: %s\n", e.what());
    return 1;
  }
  std::printf("host_cpp: saxpy_sum over %ld elements and %d diffusion steps match plain C++ (Lattice %s)\n", n,
              steps, LT_VERSION);
  return 0;
}
