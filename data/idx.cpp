#include "data/idx.h"

#include "ground/error.h"

#include <zlib.h>

#include <filesystem>
#include <memory>

namespace ht {

namespace {

constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{1} << 32;  // 4 GiB: far beyond any real file

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// Reads up to `count` bytes; returns how many were read.
std::size_t read_some(gzFile f, const std::string& path, std::uint8_t* dst, std::size_t count) {
  std::size_t done = 0;
  while (done < count) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(count - done, 1u << 24));
    const int n = gzread(f, dst + done, chunk);
    if (n < 0) {
      int errnum = 0;
      const char* message = gzerror(f, &errnum);
      fail(fmt::format("{}: cannot read: {}", path, message ? message : "zlib error"));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace

IdxArray read_idx(const std::string& path, std::size_t expected_dims) {
  HT_CHECK(std::filesystem::is_regular_file(path), "{}: no such file", path);
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  HT_CHECK(file != nullptr, "{}: cannot open", path);
  gzFile f = file.get();

  std::uint8_t magic[4] = {};
  HT_CHECK(read_some(f, path, magic, 4) == 4, "{}: truncated: shorter than the 4-byte IDX magic", path);
  HT_CHECK(magic[0] == 0 && magic[1] == 0, "{}: not an IDX file (magic {:02x}{:02x}{:02x}{:02x})", path,
           magic[0], magic[1], magic[2], magic[3]);
  HT_CHECK(magic[2] == 0x08, "{}: IDX element type 0x{:02x} is not unsigned byte (0x08)", path, magic[2]);
  HT_CHECK(magic[3] == expected_dims, "{}: has {} dimensions, expected {}", path, magic[3], expected_dims);

  IdxArray out;
  std::uint64_t total = 1;
  for (std::size_t i = 0; i < expected_dims; ++i) {
    std::uint8_t be[4] = {};
    HT_CHECK(read_some(f, path, be, 4) == 4, "{}: truncated in the header (dimension {})", path, i);
    const std::uint32_t d = (std::uint32_t{be[0]} << 24) | (std::uint32_t{be[1]} << 16) |
                            (std::uint32_t{be[2]} << 8) | std::uint32_t{be[3]};
    HT_CHECK(d > 0, "{}: dimension {} is zero", path, i);
    out.dims.push_back(d);
    total *= d;
    HT_CHECK(total <= kMaxIdxBytes, "{}: header claims more than {} bytes of data", path, kMaxIdxBytes);
  }
  // Grow with the data actually present, so a lying header cannot make us allocate gigabytes.
  constexpr std::size_t kStep = std::size_t{1} << 24;
  while (out.data.size() < total) {
    const std::size_t want = std::min<std::size_t>(kStep, total - out.data.size());
    const std::size_t at = out.data.size();
    out.data.resize(at + want);
    const std::size_t got = read_some(f, path, out.data.data() + at, want);
    HT_CHECK(got == want, "{}: truncated: header promises {} data bytes, file has {}", path, total, at + got);
  }
  std::uint8_t extra = 0;
  HT_CHECK(read_some(f, path, &extra, 1) == 0, "{}: has bytes after the {} data bytes its header promises", path, total);
  return out;
}

Dataset load_idx_pair(const std::string& name, const std::string& images_path, const std::string& labels_path,
                      std::int32_t classes) {
  IdxArray images = read_idx(images_path, 3);
  IdxArray labels = read_idx(labels_path, 1);
  HT_CHECK(images.dims[0] == labels.dims[0], "{}: has {} labels but {} has {} images", labels_path, labels.dims[0],
           images_path, images.dims[0]);
  Dataset d;
  d.name = name;
  d.samples = images.dims[0];
  d.features = std::int64_t{images.dims[1]} * images.dims[2];
  d.classes = classes;
  d.images = std::move(images.data);
  d.labels.resize(labels.data.size());
  for (std::size_t i = 0; i < labels.data.size(); ++i) {
    HT_CHECK(labels.data[i] < classes, "{}: label {} at index {} is out of range [0, {})", labels_path,
             labels.data[i], i, classes);
    d.labels[i] = labels.data[i];
  }
  return d;
}

}  // namespace ht
