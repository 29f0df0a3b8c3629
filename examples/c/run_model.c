/* run_model: runs an ONNX model through the nfuse C API.
 *
 *   run_model MODEL [NAME=INPUT.npy]... OUTDIR
 *
 * Loads MODEL, reads each named input from a .npy file (little-endian, C order), runs on the
 * `auto` backend and writes every output as OUTDIR/<output name>.npy. Exits non-zero with the
 * status message on any error. Inputs not given are refused by nfuse, naming the missing one.
 * C99; uses only nfuse.h and the C library.
 */
#include <nfuse/nfuse.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INPUTS 64
#define MAX_RANK 16

static int fail_status(const char* what, nfuse_status* status) {
  fprintf(stderr, "run_model: %s: %s: %s\n", what, nfuse_status_code_name(nfuse_status_get_code(status)),
          nfuse_status_get_message(status));
  nfuse_status_release(status);
  return 1;
}

static int fail(const char* message, const char* detail) {
  fprintf(stderr, "run_model: %s%s%s\n", message, detail ? ": " : "", detail ? detail : "");
  return 1;
}

/* .npy descr ("<f4", "|u1", ...) <-> nfuse dtype. */
static const struct {
  const char* descr;
  nfuse_dtype dtype;
} kDescrs[] = {{"<f4", NFUSE_DTYPE_FLOAT32}, {"<f8", NFUSE_DTYPE_FLOAT64}, {"<f2", NFUSE_DTYPE_FLOAT16},
               {"|u1", NFUSE_DTYPE_UINT8},   {"|i1", NFUSE_DTYPE_INT8},    {"<u2", NFUSE_DTYPE_UINT16},
               {"<i2", NFUSE_DTYPE_INT16},   {"<i4", NFUSE_DTYPE_INT32},   {"<u4", NFUSE_DTYPE_UINT32},
               {"<i8", NFUSE_DTYPE_INT64},   {"<u8", NFUSE_DTYPE_UINT64},  {"|b1", NFUSE_DTYPE_BOOL}};

static nfuse_dtype dtype_of_descr(const char* descr) {
  size_t i;
  for (i = 0; i < sizeof kDescrs / sizeof kDescrs[0]; ++i)
    if (strcmp(kDescrs[i].descr, descr) == 0) return kDescrs[i].dtype;
  return NFUSE_DTYPE_UNDEFINED;
}

static const char* descr_of_dtype(nfuse_dtype dtype) {
  size_t i;
  for (i = 0; i < sizeof kDescrs / sizeof kDescrs[0]; ++i)
    if (kDescrs[i].dtype == dtype) return kDescrs[i].descr;
  return NULL;
}

/* A loaded .npy: its bytes stay in `data` for the tensor that wraps them. */
typedef struct {
  nfuse_dtype dtype;
  int64_t dims[MAX_RANK];
  size_t rank;
  void* data;
  size_t bytes;
} npy_array;

/* Parses the header dict of an .npy file (format versions 1 and 2); 0 on success. */
static int parse_header(const char* header, npy_array* a, char* error, size_t error_size) {
  const char* d = strstr(header, "'descr':");
  const char* f = strstr(header, "'fortran_order':");
  const char* s = strstr(header, "'shape':");
  char descr[8] = {0};
  if (!d || !f || !s || sscanf(d, "'descr': '%7[^']'", descr) != 1) {
    snprintf(error, error_size, "malformed .npy header");
    return 1;
  }
  a->dtype = dtype_of_descr(descr);
  if (a->dtype == NFUSE_DTYPE_UNDEFINED) {
    snprintf(error, error_size, "unsupported dtype '%s'", descr);
    return 1;
  }
  if (strncmp(f + strlen("'fortran_order': "), "False", 5) != 0) {
    snprintf(error, error_size, "Fortran-order arrays are not supported");
    return 1;
  }
  s = strchr(s, '(');
  if (!s) {
    snprintf(error, error_size, "malformed shape");
    return 1;
  }
  ++s;
  a->rank = 0;
  while (*s && *s != ')') {
    char* end = NULL;
    long long v;
    while (*s == ' ' || *s == ',') ++s;
    if (*s == ')') break;
    v = strtoll(s, &end, 10);
    if (end == s || v < 0 || a->rank == MAX_RANK) {
      snprintf(error, error_size, "malformed shape");
      return 1;
    }
    a->dims[a->rank++] = v;
    s = end;
  }
  return 0;
}

static int read_npy(const char* path, npy_array* a, char* error, size_t error_size) {
  unsigned char magic[8];
  unsigned char len_bytes[4];
  size_t header_len;
  char* header;
  size_t i, expected;
  FILE* f = fopen(path, "rb");
  memset(a, 0, sizeof *a);
  if (!f) {
    snprintf(error, error_size, "cannot open '%s'", path);
    return 1;
  }
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0 || (magic[6] != 1 && magic[6] != 2)) {
    snprintf(error, error_size, "'%s' is not an .npy file", path);
    fclose(f);
    return 1;
  }
  if (fread(len_bytes, 1, magic[6] == 1 ? 2 : 4, f) != (magic[6] == 1 ? 2u : 4u)) {
    snprintf(error, error_size, "'%s': truncated header", path);
    fclose(f);
    return 1;
  }
  header_len = (size_t)len_bytes[0] | ((size_t)len_bytes[1] << 8);
  if (magic[6] == 2) header_len |= ((size_t)len_bytes[2] << 16) | ((size_t)len_bytes[3] << 24);
  if (header_len > (1u << 20)) {
    snprintf(error, error_size, "'%s': header too large", path);
    fclose(f);
    return 1;
  }
  header = (char*)calloc(header_len + 1, 1);
  if (!header || fread(header, 1, header_len, f) != header_len) {
    snprintf(error, error_size, "'%s': truncated header", path);
    free(header);
    fclose(f);
    return 1;
  }
  if (parse_header(header, a, error, error_size)) {
    free(header);
    fclose(f);
    return 1;
  }
  free(header);
  expected = nfuse_dtype_size(a->dtype);
  for (i = 0; i < a->rank; ++i) expected *= (size_t)a->dims[i];
  a->bytes = expected;
  a->data = malloc(expected ? expected : 1);
  if (!a->data || fread(a->data, 1, expected, f) != expected) {
    snprintf(error, error_size, "'%s': truncated data (%zu bytes expected)", path, expected);
    free(a->data);
    a->data = NULL;
    fclose(f);
    return 1;
  }
  fclose(f);
  return 0;
}

static int write_npy(const char* path, nfuse_tensor* t) {
  nfuse_dtype dtype;
  size_t rank, bytes, i, len, pad;
  const int64_t* dims;
  void* data;
  char header[512];
  unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
  const char* descr;
  FILE* f;
  nfuse_status* st;
  if ((st = nfuse_tensor_get_dtype(t, &dtype)) || (st = nfuse_tensor_get_rank(t, &rank)) ||
      (st = nfuse_tensor_get_dims(t, &dims)) || (st = nfuse_tensor_get_byte_size(t, &bytes)) ||
      (st = nfuse_tensor_get_data(t, &data)))
    return fail_status("reading an output", st);
  descr = descr_of_dtype(dtype);
  if (!descr) return fail("cannot write dtype as .npy", nfuse_dtype_name(dtype));
  len = (size_t)snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (i = 0; i < rank && len < 400; ++i)
    len += (size_t)snprintf(header + len, sizeof header - len, "%lld%s", (long long)dims[i],
                            rank == 1      ? ","
                            : i + 1 < rank ? ", "
                                           : "");
  len += (size_t)snprintf(header + len, sizeof header - len, "), }");
  pad = 64 - (10 + len + 1) % 64;
  memset(header + len, ' ', pad % 64);
  len += pad % 64;
  header[len++] = '\n';
  prefix[8] = (unsigned char)(len & 0xff);
  prefix[9] = (unsigned char)(len >> 8);
  f = fopen(path, "wb");
  if (!f) return fail("cannot create", path);
  if (fwrite(prefix, 1, 10, f) != 10 || fwrite(header, 1, len, f) != len || fwrite(data, 1, bytes, f) != bytes) {
    fclose(f);
    return fail("cannot write", path);
  }
  if (fclose(f) != 0) return fail("cannot write", path);
  return 0;
}

/* Output names may hold characters a file name cannot ('/'): those become '_'. */
static void file_safe(const char* name, char* out, size_t size) {
  size_t i;
  for (i = 0; name[i] && i + 1 < size; ++i) {
    const char c = name[i];
    out[i] = (c == '/' || c == '\\' || c == ':' || (i == 0 && c == '.')) ? '_' : c;
  }
  out[i] = '\0';
}

int main(int argc, char** argv) {
  nfuse_runtime* rt = NULL;
  nfuse_model* model = NULL;
  nfuse_session_options* options = NULL;
  nfuse_session* session = NULL;
  nfuse_status* st = NULL;
  npy_array arrays[MAX_INPUTS];
  nfuse_tensor* inputs[MAX_INPUTS] = {0};
  const char* names[MAX_INPUTS];
  nfuse_tensor** outputs = NULL;
  size_t n_inputs = 0, n_outputs = 0, i;
  int rc = 1;
  const char* outdir;
  char error[256];

  if (argc < 3) {
    fprintf(stderr, "usage: run_model MODEL [NAME=INPUT.npy]... OUTDIR\n");
    return 2;
  }
  outdir = argv[argc - 1];
  memset(arrays, 0, sizeof arrays);
  for (i = 2; i + 1 < (size_t)argc; ++i) {
    char* eq = strchr(argv[i], '=');
    if (!eq || eq == argv[i] || !eq[1] || n_inputs == MAX_INPUTS) {
      fprintf(stderr, "run_model: '%s' must look like NAME=INPUT.npy\n", argv[i]);
      return 2;
    }
    *eq = '\0';
    names[n_inputs] = argv[i];
    if (read_npy(eq + 1, &arrays[n_inputs], error, sizeof error)) {
      rc = fail(error, NULL);
      goto done;
    }
    if ((st = nfuse_tensor_wrap(arrays[n_inputs].dtype, arrays[n_inputs].dims, arrays[n_inputs].rank,
                                arrays[n_inputs].data, arrays[n_inputs].bytes, &inputs[n_inputs]))) {
      ++n_inputs;
      rc = fail_status("wrapping an input", st);
      goto done;
    }
    ++n_inputs;
  }

  if ((st = nfuse_runtime_create(&rt))) {
    rc = fail_status("creating the runtime", st);
    goto done;
  }
  if ((st = nfuse_model_load_file(rt, argv[1], &model))) {
    rc = fail_status("loading the model", st);
    goto done;
  }
  if ((st = nfuse_session_options_create(&options)) ||
      (st = nfuse_session_options_set_backend(options, NFUSE_BACKEND_AUTO))) {
    rc = fail_status("setting options", st);
    goto done;
  }
  if ((st = nfuse_session_create(rt, model, options, &session))) {
    rc = fail_status("creating the session", st);
    goto done;
  }
  if ((st = nfuse_session_io_count(session, NFUSE_IO_OUTPUT, &n_outputs))) {
    rc = fail_status("reading outputs", st);
    goto done;
  }
  outputs = (nfuse_tensor**)calloc(n_outputs ? n_outputs : 1, sizeof *outputs);
  if (!outputs) {
    rc = fail("out of memory", NULL);
    goto done;
  }
  if ((st = nfuse_session_run(session, names, (const nfuse_tensor* const*)inputs, n_inputs, NULL, outputs, n_outputs,
                              NULL))) {
    rc = fail_status("running", st);
    goto done;
  }
  for (i = 0; i < n_outputs; ++i) {
    const char* name = NULL;
    char safe[256], path[4096];
    if ((st = nfuse_session_io_name(session, NFUSE_IO_OUTPUT, i, &name))) {
      rc = fail_status("reading outputs", st);
      goto done;
    }
    file_safe(name, safe, sizeof safe);
    snprintf(path, sizeof path, "%s/%s.npy", outdir, safe);
    if (write_npy(path, outputs[i])) goto done;
    printf("%s -> %s\n", name, path);
  }
  rc = 0;

done:
  for (i = 0; outputs && i < n_outputs; ++i) nfuse_tensor_release(outputs[i]);
  free(outputs);
  for (i = 0; i < n_inputs; ++i) {
    nfuse_tensor_release(inputs[i]);
    free(arrays[i].data);
  }
  nfuse_session_release(session);
  nfuse_session_options_release(options);
  nfuse_model_release(model);
  nfuse_runtime_release(rt);
  return rc;
}
