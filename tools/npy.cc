#include "tools/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>

namespace kiln::tools {

namespace {

struct DescrEntry {
  const char* descr;
  kiln_dtype_t dtype;
};
const DescrEntry kDescrs[] = {
    {"<f4", KILN_DTYPE_F32}, {"<f8", KILN_DTYPE_F64}, {"<f2", KILN_DTYPE_F16},
    {"<i8", KILN_DTYPE_I64}, {"<i4", KILN_DTYPE_I32}, {"<i2", KILN_DTYPE_I16},
    {"|i1", KILN_DTYPE_I8},  {"|u1", KILN_DTYPE_U8},  {"|b1", KILN_DTYPE_BOOL},
    {"<u2", KILN_DTYPE_U16}, {"<u4", KILN_DTYPE_U32}, {"<u8", KILN_DTYPE_U64},
};

bool Fail(std::string* error, const std::string& msg) {
  *error = msg;
  return false;
}

// Finds `'key':` in the header dict and returns the position after the colon.
bool FindKey(const std::string& header, const char* key, size_t* pos) {
  std::string k1 = std::string("'") + key + "'";
  std::string k2 = std::string("\"") + key + "\"";
  size_t p = header.find(k1);
  if (p == std::string::npos) p = header.find(k2);
  if (p == std::string::npos) return false;
  p = header.find(':', p);
  if (p == std::string::npos) return false;
  *pos = p + 1;
  return true;
}

void SkipSpace(const std::string& s, size_t* p) {
  while (*p < s.size() && (s[*p] == ' ' || s[*p] == '\t')) ++*p;
}

}  // namespace

size_t NpyArray::element_count() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

bool ParseNpy(const std::string& name, const std::vector<uint8_t>& bytes, NpyArray* out,
              std::string* error) {
  static const uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    return Fail(error, name + ": not a .npy file (bad magic)");
  }
  uint8_t major = bytes[6];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Fail(error, name + ": truncated .npy header");
    header_len = static_cast<size_t>(bytes[8]) | (static_cast<size_t>(bytes[9]) << 8) |
                 (static_cast<size_t>(bytes[10]) << 16) | (static_cast<size_t>(bytes[11]) << 24);
    header_start = 12;
  } else {
    return Fail(error, name + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_len > bytes.size() - header_start) {
    return Fail(error, name + ": truncated .npy header");
  }
  std::string header(reinterpret_cast<const char*>(bytes.data() + header_start), header_len);

  // descr
  size_t p;
  if (!FindKey(header, "descr", &p)) return Fail(error, name + ": .npy header lacks 'descr'");
  SkipSpace(header, &p);
  if (p >= header.size() || (header[p] != '\'' && header[p] != '"')) {
    return Fail(error, name + ": .npy 'descr' is not a simple dtype string");
  }
  char quote = header[p];
  size_t end = header.find(quote, p + 1);
  if (end == std::string::npos) return Fail(error, name + ": malformed .npy header");
  std::string descr = header.substr(p + 1, end - p - 1);
  // Single-byte types may be written with '<', '|' or '='.
  std::string norm = descr;
  if (norm.size() == 3 && (norm[0] == '<' || norm[0] == '=' || norm[0] == '|') &&
      norm.substr(1) != "f4" && norm[2] == '1') {
    norm[0] = '|';
  }
  if (norm.size() == 3 && norm[0] == '=') norm[0] = '<';  // little-endian hosts only
  out->dtype = KILN_DTYPE_INVALID;
  for (const DescrEntry& e : kDescrs) {
    if (norm == e.descr) out->dtype = e.dtype;
  }
  if (out->dtype == KILN_DTYPE_INVALID) {
    std::string why = (!descr.empty() && descr[0] == '>') ? " (big-endian)" : "";
    return Fail(error, name + ": unsupported dtype '" + descr + "'" + why +
                           "; supported: f32, f64, f16, i64, i32, i16, i8, u8, bool, u16, u32, u64");
  }

  // fortran_order
  if (!FindKey(header, "fortran_order", &p)) {
    return Fail(error, name + ": .npy header lacks 'fortran_order'");
  }
  SkipSpace(header, &p);
  if (header.compare(p, 5, "False") != 0) {
    return Fail(error, name + ": Fortran-order arrays are not supported (use C order)");
  }

  // shape
  if (!FindKey(header, "shape", &p)) return Fail(error, name + ": .npy header lacks 'shape'");
  SkipSpace(header, &p);
  if (p >= header.size() || header[p] != '(') return Fail(error, name + ": malformed shape");
  end = header.find(')', p);
  if (end == std::string::npos) return Fail(error, name + ": malformed shape");
  std::string dims = header.substr(p + 1, end - p - 1);
  out->shape.clear();
  size_t i = 0;
  while (i < dims.size()) {
    while (i < dims.size() && (dims[i] == ' ' || dims[i] == ',')) ++i;
    if (i >= dims.size()) break;
    if (dims[i] < '0' || dims[i] > '9') return Fail(error, name + ": malformed shape");
    int64_t v = 0;
    while (i < dims.size() && dims[i] >= '0' && dims[i] <= '9') {
      v = v * 10 + (dims[i] - '0');
      if (v > (int64_t{1} << 40)) return Fail(error, name + ": shape is too large");
      ++i;
    }
    if (i < dims.size() && dims[i] == 'L') ++i;  // Python 2 longs
    out->shape.push_back(v);
  }
  if (out->shape.size() > KILN_MAX_RANK) {
    return Fail(error, name + ": rank " + std::to_string(out->shape.size()) + " exceeds " +
                           std::to_string(KILN_MAX_RANK));
  }
  size_t count = 1;
  for (int64_t d : out->shape) {
    if (d != 0 && count > (size_t{1} << 40) / static_cast<size_t>(d)) {
      return Fail(error, name + ": shape is too large");
    }
    count *= static_cast<size_t>(d);
  }
  size_t data_bytes = count * kiln_dtype_size(out->dtype);
  size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != data_bytes) {
    return Fail(error, name + ": expected " + std::to_string(data_bytes) +
                           " bytes of data, file has " + std::to_string(bytes.size() - data_start));
  }
  out->data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start), bytes.end());
  return true;
}

bool ReadNpy(const std::string& path, NpyArray* out, std::string* error) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Fail(error, path + ": cannot open: " + std::strerror(errno));
  // Only regular files of bounded size (/dev/zero or a FIFO would be read
  // until memory runs out).
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(f);
    return Fail(error, path + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxArrayBytes + 65536) {
    std::fclose(f);
    return Fail(error, path + ": " + std::to_string(st.st_size) + " bytes, over the " +
                           std::to_string(kMaxArrayBytes >> 20) + " MiB limit of .npy inputs");
  }
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  bool read_error = std::ferror(f);
  std::fclose(f);
  if (read_error) return Fail(error, path + ": read error");
  return ParseNpy(path, bytes, out, error);
}

bool SerializeNpy(const NpyArray& array, std::vector<uint8_t>* out, std::string* error) {
  const char* descr = nullptr;
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == array.dtype) descr = e.descr;
  }
  if (!descr) {
    return Fail(error, std::string("cannot write dtype ") + kiln_dtype_name(array.dtype) +
                           " to .npy");
  }
  std::string shape = "(";
  for (size_t i = 0; i < array.shape.size(); ++i) {
    shape += std::to_string(array.shape[i]);
    if (array.shape.size() == 1 || i + 1 < array.shape.size()) shape += ",";
    if (i + 1 < array.shape.size()) shape += " ";
  }
  shape += ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that magic(6)+version(2)+len(2)+header is a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  out->clear();
  const uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out->insert(out->end(), magic, magic + 8);
  out->push_back(static_cast<uint8_t>(header.size() & 0xFF));
  out->push_back(static_cast<uint8_t>(header.size() >> 8));
  out->insert(out->end(), header.begin(), header.end());
  out->insert(out->end(), array.data.begin(), array.data.end());
  return true;
}

bool WriteNpy(const std::string& path, const NpyArray& array, std::string* error) {
  std::vector<uint8_t> bytes;
  if (!SerializeNpy(array, &bytes, error)) return false;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Fail(error, path + ": cannot open for writing: " + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return Fail(error, path + ": write error");
  return true;
}

}  // namespace kiln::tools
