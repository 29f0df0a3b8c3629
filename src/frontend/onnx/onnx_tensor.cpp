#include "frontend/onnx/onnx_tensor.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace nfuse::frontend::onnx {

using ::onnx::TensorProto;

ir::DType dtype_from_onnx(int t) {
  switch (t) {
    case TensorProto::FLOAT: return ir::DType::kF32;
    case TensorProto::FLOAT16: return ir::DType::kF16;
    case TensorProto::BFLOAT16: return ir::DType::kBF16;
    case TensorProto::DOUBLE: return ir::DType::kF64;
    case TensorProto::INT8: return ir::DType::kI8;
    case TensorProto::UINT8: return ir::DType::kU8;
    case TensorProto::INT16: return ir::DType::kI16;
    case TensorProto::UINT16: return ir::DType::kU16;
    case TensorProto::INT32: return ir::DType::kI32;
    case TensorProto::UINT32: return ir::DType::kU32;
    case TensorProto::INT64: return ir::DType::kI64;
    case TensorProto::UINT64: return ir::DType::kU64;
    case TensorProto::BOOL: return ir::DType::kBool;
    default: return ir::DType::kUndefined;
  }
}

int dtype_to_onnx(ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return TensorProto::FLOAT;
    case ir::DType::kF16: return TensorProto::FLOAT16;
    case ir::DType::kBF16: return TensorProto::BFLOAT16;
    case ir::DType::kF64: return TensorProto::DOUBLE;
    case ir::DType::kI8: return TensorProto::INT8;
    case ir::DType::kU8: return TensorProto::UINT8;
    case ir::DType::kI16: return TensorProto::INT16;
    case ir::DType::kU16: return TensorProto::UINT16;
    case ir::DType::kI32: return TensorProto::INT32;
    case ir::DType::kU32: return TensorProto::UINT32;
    case ir::DType::kI64: return TensorProto::INT64;
    case ir::DType::kU64: return TensorProto::UINT64;
    case ir::DType::kBool: return TensorProto::BOOL;
    case ir::DType::kUndefined: return TensorProto::UNDEFINED;
  }
  return TensorProto::UNDEFINED;
}

std::string onnx_elem_type_name(int t) {
  if (TensorProto::DataType_IsValid(t)) return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t));
  return "unknown element type " + std::to_string(t);
}

namespace {

// Copies `count` elements of a typed repeated field into `dst`, converting to the target type.
template <typename Dst, typename Field>
void copy_field(const Field& field, Dst* dst) {
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<Dst>(field.Get(i));
}

int64_t typed_field_count(const TensorProto& p, ir::DType t) {
  switch (t) {
    case ir::DType::kF32: return p.float_data_size();
    case ir::DType::kF64: return p.double_data_size();
    case ir::DType::kI64: return p.int64_data_size();
    case ir::DType::kU32: case ir::DType::kU64: return p.uint64_data_size();
    default: return p.int32_data_size();
  }
}

Status fill_from_typed_fields(const TensorProto& p, ir::Tensor& t, const std::string& what) {
  const int64_t n = t.numel();
  auto need = [&](int have) -> Status {
    if (have != n) {
      return invalid_model(what + ": has " + std::to_string(have) + " values for " + std::to_string(n) + " elements");
    }
    return ok_status();
  };
  switch (t.dtype()) {
    case ir::DType::kF32: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.float_data_size())); copy_field(p.float_data(), t.data<float>()); break;
    case ir::DType::kF64: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.double_data_size())); copy_field(p.double_data(), t.data<double>()); break;
    case ir::DType::kI64: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.int64_data_size())); copy_field(p.int64_data(), t.data<int64_t>()); break;
    case ir::DType::kU32: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.uint64_data_size())); copy_field(p.uint64_data(), t.data<uint32_t>()); break;
    case ir::DType::kU64: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.uint64_data_size())); copy_field(p.uint64_data(), t.data<uint64_t>()); break;
    case ir::DType::kI32: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.int32_data_size())); copy_field(p.int32_data(), t.data<int32_t>()); break;
    case ir::DType::kI16: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.int32_data_size())); copy_field(p.int32_data(), t.data<int16_t>()); break;
    case ir::DType::kU16: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.int32_data_size())); copy_field(p.int32_data(), t.data<uint16_t>()); break;
    case ir::DType::kI8: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.int32_data_size())); copy_field(p.int32_data(), t.data<int8_t>()); break;
    case ir::DType::kU8: NFUSE_RETURN_IF_ERROR_PLAIN(need(p.int32_data_size())); copy_field(p.int32_data(), t.data<uint8_t>()); break;
    case ir::DType::kBool: {
      NFUSE_RETURN_IF_ERROR_PLAIN(need(p.int32_data_size()));
      for (int i = 0; i < p.int32_data_size(); ++i) t.data<bool>()[i] = p.int32_data(i) != 0;
      break;
    }
    case ir::DType::kF16:
    case ir::DType::kBF16: {  // 16-bit floats travel as their bit patterns in int32_data
      NFUSE_RETURN_IF_ERROR_PLAIN(need(p.int32_data_size()));
      for (int i = 0; i < p.int32_data_size(); ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(p.int32_data(i));
      break;
    }
    case ir::DType::kUndefined: return internal_error(what + ": undefined dtype");
  }
  return ok_status();
}

// Reads external data straight into a new tensor; every size is checked against the file before
// the tensor is allocated.
Result<ir::Tensor> read_external(const TensorProto& p, const std::string& base_dir, ir::DType dtype,
                                 const std::vector<int64_t>& dims, size_t expected, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::strtoll(kv.value().c_str(), nullptr, 10);
    else if (kv.key() == "length") length = std::strtoll(kv.value().c_str(), nullptr, 10);
  }
  if (location.empty()) return invalid_model(what + ": external data has no location");
  namespace fs = std::filesystem;
  const fs::path rel(location);
  if (rel.is_absolute() || location.find("..") != std::string::npos) {
    return invalid_model(what + ": external data location '" + location + "' must be a relative path inside the model folder");
  }
  const fs::path full = fs::path(base_dir.empty() ? "." : base_dir) / rel;
  std::ifstream f(full, std::ios::binary);
  if (!f) return not_found(what + ": external data file '" + full.string() + "' cannot be opened");
  f.seekg(0, std::ios::end);
  const int64_t file_size = f.tellg();
  if (offset < 0 || offset > file_size) {
    return invalid_model(what + ": external data offset " + std::to_string(offset) + " is outside '" + full.string() + "'");
  }
  if (length < 0) length = static_cast<int64_t>(expected);
  if (static_cast<size_t>(length) != expected || offset + length > file_size) {
    return invalid_model(what + ": external data length " + std::to_string(length) + " at offset " + std::to_string(offset) +
                         " does not fit " + std::to_string(expected) + " bytes in '" + full.string() + "' (" +
                         std::to_string(file_size) + " bytes)");
  }
  ir::Tensor t = ir::Tensor::allocate(dtype, dims);
  f.seekg(offset);
  if (length > 0) f.read(static_cast<char*>(t.raw()), length);
  if (!f) return invalid_model(what + ": reading external data from '" + full.string() + "' failed");
  return t;
}

}  // namespace

Result<ir::Tensor> tensor_from_proto(const TensorProto& p, const std::string& base_dir) {
  const std::string what = "tensor '" + p.name() + "'";
  const ir::DType dtype = dtype_from_onnx(p.data_type());
  if (dtype == ir::DType::kUndefined) {
    return unsupported(what + ": element type " + onnx_elem_type_name(p.data_type()) + " is not supported");
  }
  if (p.has_segment()) return unsupported(what + ": segmented tensors are not supported");
  std::vector<int64_t> dims;
  // Overflow-safe element count: hostile dims must not wrap into a small allocation.
  int64_t numel = 1;
  for (int64_t d : p.dims()) {
    if (d < 0) return invalid_model(what + ": negative dimension " + std::to_string(d));
    if (d != 0 && numel > std::numeric_limits<int64_t>::max() / 8 / d) {
      return invalid_model(what + ": dimensions overflow");
    }
    numel *= d;
    dims.push_back(d);
  }
  const size_t bytes = static_cast<size_t>(numel) * ir::dtype_size(dtype);
  if (p.data_location() == TensorProto::EXTERNAL) {
    return read_external(p, base_dir, dtype, dims, bytes, what);
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes) {
      return invalid_model(what + ": raw_data has " + std::to_string(p.raw_data().size()) + " bytes, dims " +
                           ir::dims_to_string(dims) + " of " + std::string(ir::dtype_name(dtype)) + " need " +
                           std::to_string(bytes));
    }
    ir::Tensor t = ir::Tensor::allocate(dtype, dims);
    if (bytes) std::memcpy(t.raw(), p.raw_data().data(), bytes);
    return t;
  }
  // Check the count before allocating what the dims claim.
  if (typed_field_count(p, dtype) != numel) {
    return invalid_model(what + ": has " + std::to_string(typed_field_count(p, dtype)) + " values for dims " +
                         ir::dims_to_string(dims));
  }
  ir::Tensor t = ir::Tensor::allocate(dtype, dims);
  NFUSE_RETURN_IF_ERROR_PLAIN(fill_from_typed_fields(p, t, what));
  return t;
}

void release_tensor_payload(TensorProto& p) {
  // clear_*() keeps the capacity; swapping with empty containers frees it.
  if (p.has_raw_data()) {
    std::string().swap(*p.mutable_raw_data());
    p.clear_raw_data();
  }
  google::protobuf::RepeatedField<float>().Swap(p.mutable_float_data());
  google::protobuf::RepeatedField<double>().Swap(p.mutable_double_data());
  google::protobuf::RepeatedField<int32_t>().Swap(p.mutable_int32_data());
  google::protobuf::RepeatedField<int64_t>().Swap(p.mutable_int64_data());
  google::protobuf::RepeatedField<uint64_t>().Swap(p.mutable_uint64_data());
  google::protobuf::RepeatedPtrField<std::string>().Swap(p.mutable_string_data());
}

void tensor_to_proto(const ir::Tensor& t, const std::string& name, TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.dims()) p->add_dims(d);
  p->set_raw_data(t.raw(), t.bytes());
}

Result<ir::Tensor> load_tensor_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open tensor file '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  TensorProto p;
  if (!p.ParseFromString(bytes)) return invalid_model("'" + path + "' is not a serialized ONNX TensorProto");
  NFUSE_ASSIGN_OR_RETURN(ir::Tensor t, tensor_from_proto(p, std::filesystem::path(path).parent_path().string()));
  return t;
}

}  // namespace nfuse::frontend::onnx
