// A model file cannot travel to a machine that only accepts a few tens of MiB, but its speed
// depends only on its architecture, hyper-parameters, tokenizer size and tensor types. So:
//
//   arbitra-synth-gguf skeleton MODEL.gguf OUT.skel.gguf
//     every KV pair of MODEL plus each tensor's name, type and shape, and no tensor data
//   arbitra-synth-gguf fill OUT.skel.gguf MODEL_OUT.gguf [--seed N] [--threads N]
//     a loadable GGUF of the same shape with random weights, the same for the same seed
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ggml.h"
#include "gguf.h"

namespace {

const char* const kNames = "arbitra.synth.names";
const char* const kTypes = "arbitra.synth.types";
const char* const kShapes = "arbitra.synth.shapes";  // GGML_MAX_DIMS int64 per tensor

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "arbitra-synth-gguf: %s\n", why.c_str());
  std::exit(1);
}

gguf_context* open_meta(const char* path) {
  gguf_init_params params = {/*no_alloc =*/true, /*ctx =*/nullptr};
  gguf_context* ctx = gguf_init_from_file(path, params);
  if (ctx == nullptr) die(std::string("cannot read GGUF ") + path);
  return ctx;
}

int skeleton(const char* in, const char* out) {
  gguf_context* src = open_meta(in);
  gguf_context* dst = gguf_init_empty();
  gguf_set_kv(dst, src);
  const int64_t n = gguf_get_n_tensors(src);
  std::vector<const char*> names;
  std::vector<int32_t> types;
  std::vector<int64_t> shapes;
  for (int64_t i = 0; i < n; ++i) {
    names.push_back(gguf_get_tensor_name(src, i));
    types.push_back(static_cast<int32_t>(gguf_get_tensor_type(src, i)));
    const int64_t* ne = gguf_get_tensor_ne(src, i);
    shapes.insert(shapes.end(), ne, ne + GGML_MAX_DIMS);
  }
  gguf_set_arr_str(dst, kNames, names.data(), names.size());
  gguf_set_arr_data(dst, kTypes, GGUF_TYPE_INT32, types.data(), types.size());
  gguf_set_arr_data(dst, kShapes, GGUF_TYPE_INT64, shapes.data(), shapes.size());
  if (!gguf_write_to_file(dst, out, /*only_meta =*/true)) die(std::string("cannot write ") + out);
  std::fprintf(stderr, "%s: %lld tensors, %lld KV pairs\n", out, static_cast<long long>(n), static_cast<long long>(gguf_get_n_kv(src)));
  gguf_free(dst);
  gguf_free(src);
  return 0;
}

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

enum class Fill { noise, ones, zeros };

// Norm weights and other vectors of scales (rope frequency factors) at 1, biases at 0, matrices at
// the usual initialisation scale: activations then stay finite through every layer, so no kernel
// takes a NaN or overflow path that a real model would not.
Fill fill_for(const std::string& name, const int64_t* ne) {
  const bool vector = ne[1] == 1 && ne[2] == 1 && ne[3] == 1;
  if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0) return Fill::zeros;
  if (name.find("norm") != std::string::npos || vector) return Fill::ones;
  return Fill::noise;
}

// One row's values from its own seed, so the file does not depend on the thread count.
void make_row(float* out, int64_t n, Fill fill, uint64_t seed) {
  if (fill != Fill::noise) {
    std::fill(out, out + n, fill == Fill::ones ? 1.0f : 0.0f);
    return;
  }
  // Irwin-Hall: four 16-bit uniforms summed are close enough to normal for weights nobody reads.
  const float scale = 0.02f / (65535.0f * 0.5773503f);  // the sum's std is 65535 * sqrt(4/12)
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = splitmix64(seed);
    const int32_t sum = static_cast<int32_t>(r & 0xffff) + static_cast<int32_t>((r >> 16) & 0xffff) + static_cast<int32_t>((r >> 32) & 0xffff) +
                        static_cast<int32_t>(r >> 48) - 2 * 65535;
    out[i] = static_cast<float>(sum) * scale;
  }
}

bool encodable(ggml_type type) { return type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16 || ggml_is_quantized(type); }

int fill(const char* in, const char* out, uint64_t seed, unsigned threads) {
  gguf_context* skel = open_meta(in);
  const int64_t k_names = gguf_find_key(skel, kNames);
  const int64_t k_types = gguf_find_key(skel, kTypes);
  const int64_t k_shapes = gguf_find_key(skel, kShapes);
  if (k_names < 0 || k_types < 0 || k_shapes < 0) die(std::string(in) + " is not a skeleton (made by `arbitra-synth-gguf skeleton`)");
  const size_t n = gguf_get_arr_n(skel, k_names);
  if (gguf_get_arr_n(skel, k_types) != n || gguf_get_arr_n(skel, k_shapes) != n * GGML_MAX_DIMS) die(std::string(in) + ": tensor tables disagree");
  const auto* types = static_cast<const int32_t*>(gguf_get_arr_data(skel, k_types));
  const auto* shapes = static_cast<const int64_t*>(gguf_get_arr_data(skel, k_shapes));

  gguf_context* dst = gguf_init_empty();
  gguf_set_kv(dst, skel);
  for (const char* k : {kNames, kTypes, kShapes}) gguf_remove_key(dst, k);

  ggml_init_params ip = {/*mem_size =*/ggml_tensor_overhead() * (n + 1), /*mem_buffer =*/nullptr, /*no_alloc =*/true};
  ggml_context* meta = ggml_init(ip);
  std::vector<ggml_tensor*> tensors;
  for (size_t i = 0; i < n; ++i) {
    const auto type = static_cast<ggml_type>(types[i]);
    if (type < 0 || type >= GGML_TYPE_COUNT || ggml_blck_size(type) == 0) die("unknown tensor type " + std::to_string(types[i]));
    ggml_tensor* t = ggml_new_tensor(meta, type, GGML_MAX_DIMS, shapes + i * GGML_MAX_DIMS);
    ggml_set_name(t, gguf_get_arr_str(skel, k_names, i));
    gguf_add_tensor(dst, t);
    tensors.push_back(t);
  }

  FILE* f = std::fopen(out, "wb");
  if (f == nullptr) die(std::string("cannot write ") + out);
  std::vector<uint8_t> head(gguf_get_meta_size(dst));
  gguf_get_meta_data(dst, head.data());
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  size_t written = 0;  // bytes of the data section so far

  // Types whose quantiser insists on an importance matrix get a flat one: every column equally
  // important, which keeps the tensor's type (and so its kernels) instead of substituting another.
  std::vector<float> flat_imatrix;
  std::vector<uint8_t> data;
  for (size_t i = 0; i < n && ok; ++i) {
    ggml_tensor* t = tensors[i];
    const int64_t n_per_row = t->ne[0];
    const int64_t rows = ggml_nrows(t);
    const size_t row_size = ggml_row_size(t->type, n_per_row);
    data.assign(ggml_nbytes(t), 0);
    const float* imatrix = nullptr;
    if (ggml_quantize_requires_imatrix(t->type)) {
      flat_imatrix.assign(static_cast<size_t>(n_per_row), 1.0f);
      imatrix = flat_imatrix.data();
      std::fprintf(stderr, "%s: %s needs an importance matrix; quantised with a flat one\n", t->name, ggml_type_name(t->type));
    }
    if (encodable(t->type)) {
      ggml_quantize_init(t->type);  // its lookup tables, once, before the threads race for them
      const Fill how = fill_for(t->name, t->ne);
      // Chunks of whole rows, about 64K values each, handed out to the threads in turn.
      const int64_t chunk = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, n_per_row));
      std::atomic<int64_t> next{0};
      auto work = [&] {
        std::vector<float> src;
        for (;;) {
          const int64_t r0 = next.fetch_add(chunk);
          if (r0 >= rows) return;
          const int64_t nr = std::min(chunk, rows - r0);
          src.resize(static_cast<size_t>(nr * n_per_row));
          for (int64_t r = 0; r < nr; ++r) {
            uint64_t s = seed * 0x9e3779b97f4a7c15ULL ^ (static_cast<uint64_t>(i) << 40) ^ static_cast<uint64_t>(r0 + r);
            make_row(src.data() + r * n_per_row, n_per_row, how, splitmix64(s));
          }
          ggml_quantize_chunk(t->type, src.data(), data.data() + static_cast<size_t>(r0) * row_size, 0, nr, n_per_row, imatrix);
        }
      };
      std::vector<std::thread> pool;
      for (unsigned k = 1; k < threads; ++k) pool.emplace_back(work);
      work();
      for (auto& th : pool) th.join();
    } else {
      std::fprintf(stderr, "%s: %s is not a float or quantised type; written as zeros\n", t->name, ggml_type_name(t->type));
    }
    const size_t at = gguf_get_tensor_offset(dst, static_cast<int64_t>(i));
    const std::vector<uint8_t> pad(at - written, 0);
    ok = std::fwrite(pad.data(), 1, pad.size(), f) == pad.size() && std::fwrite(data.data(), 1, data.size(), f) == data.size();
    written = at + data.size();
  }
  // The data section ends on the alignment too, as gguf's own writer leaves it.
  const size_t align = gguf_get_alignment(dst);
  const std::vector<uint8_t> tail((align - written % align) % align, 0);
  ok = ok && std::fwrite(tail.data(), 1, tail.size(), f) == tail.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) die(std::string("write failed: ") + out);
  std::fprintf(stderr, "%s: %zu tensors, %zu bytes, seed %llu\n", out, n, head.size() + written + tail.size(), static_cast<unsigned long long>(seed));
  ggml_free(meta);
  gguf_free(dst);
  gguf_free(skel);
  return 0;
}

void usage() {
  std::fprintf(stderr,
               "usage: arbitra-synth-gguf skeleton MODEL.gguf OUT.skel.gguf\n"
               "       arbitra-synth-gguf fill OUT.skel.gguf MODEL_OUT.gguf [--seed N] [--threads N]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) usage();
  const std::string cmd = argv[1];
  if (cmd == "skeleton" && argc == 4) return skeleton(argv[2], argv[3]);
  if (cmd != "fill") usage();
  uint64_t seed = 1;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    if (a == "--seed")
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--threads")
      threads = std::max(1u, static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10)));
    else
      usage();
  }
  return fill(argv[2], argv[3], seed, threads);
}
