// triad.cu -- hand-written CUDA references for bench/gpu.lua's triad
// a[i] = b[i] + s*c[i] over 2^26 f32, each timed with events (median of R):
//   triad_cuda_grid_ms    scalar grid-stride loop, 32 blocks of 256 threads
//                         per multiprocessor (the launch Lattice makes)
//   triad_cuda_flat_ms    scalar, one element per thread
//   triad_cuda_vec4_ms    float4 loads and stores, one vector per thread
//   copy_cuda_ms          cudaMemcpy device to device of one array
// bench/gpu.sh builds it with nvcc where the machine has one:
//   nvcc -O3 -o triad_cuda bench/triad.cu && ./triad_cuda [R]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                   \
  do {                                                                          \
    cudaError_t e_ = (x);                                                       \
    if (e_ != cudaSuccess) {                                                    \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                  \
    }                                                                           \
  } while (0)

__global__ void grid(float *a, const float *b, const float *c, float s, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
    a[i] = b[i] + s * c[i];
}

__global__ void flat(float *a, const float *b, const float *c, float s, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}

__global__ void vec4(float4 *a, const float4 *b, const float4 *c, float s, long n4) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

template <class F> static float median_ms(int reps, F f) {
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  f();   // warm
  std::vector<float> t(reps);
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(t0));
    f();
    CK(cudaEventRecord(t1));
    CK(cudaEventSynchronize(t1));
    CK(cudaEventElapsedTime(&t[r], t0, t1));
  }
  std::sort(t.begin(), t.end());
  return t[reps / 2];
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20;
  const long n = 1L << 26;
  float *a, *b, *c;
  CK(cudaMalloc(&a, n * 4));
  CK(cudaMalloc(&b, n * 4));
  CK(cudaMalloc(&c, n * 4));
  CK(cudaMemset(b, 0, n * 4));
  CK(cudaMemset(c, 0, n * 4));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float g = median_ms(reps, [&] { grid<<<sms * 32, 256>>>(a, b, c, 3.0f, n); });
  float f = median_ms(reps, [&] { flat<<<(n + 255) / 256, 256>>>(a, b, c, 3.0f, n); });
  float v = median_ms(reps, [&] {
    vec4<<<(n / 4 + 255) / 256, 256>>>((float4 *)a, (const float4 *)b, (const float4 *)c, 3.0f, n / 4);
  });
  float cp = median_ms(reps, [&] { CK(cudaMemcpy(a, b, n * 4, cudaMemcpyDeviceToDevice)); });
  CK(cudaGetLastError());
  printf("triad_cuda_grid_ms %.4f\ntriad_cuda_flat_ms %.4f\ntriad_cuda_vec4_ms %.4f\ncopy_cuda_ms %.4f\n", g, f, v, cp);
  printf("triad_cuda_grid_gbs %.1f\ntriad_cuda_flat_gbs %.1f\ntriad_cuda_vec4_gbs %.1f\ncopy_cuda_gbs %.1f\n",
         12.0 * n / g / 1e6, 12.0 * n / f / 1e6, 12.0 * n / v / 1e6, 8.0 * n / cp / 1e6);
  return 0;
}
