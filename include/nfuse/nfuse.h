/* nfuse C API: the stable ABI of libnfuse. C99; every object is an opaque handle.
 *
 * Conventions
 * - Every call that can fail returns `nfuse_status*`: NULL means success; otherwise the caller
 *   owns the status and frees it with nfuse_status_release(). Its code says what kind of error,
 *   its message what and where ("session_run: input 'x' must be f32, got u8").
 * - No exception, abort or exit crosses this boundary. NULL handles, NULL out-pointers, wrong
 *   dtypes or shapes, unknown names and sizes that overflow return NFUSE_INVALID_ARGUMENT.
 * - Objects returned through `out` pointers are owned by the caller and freed with their
 *   `_release` function (which accepts NULL). Strings returned as `const char**` are owned by the
 *   handle they came from and stay valid until that handle is released (or, where said, until the
 *   next call of the same function on it).
 * - Versioning: symbols are append-only. A symbol, once released, keeps its name, signature and
 *   meaning; new behaviour arrives as new functions (and new enum values at the end), never as new
 *   fields in a public struct: there are no public structs, options are set through setters on
 *   opaque handles. So an application built against an older nfuse.h runs unchanged against a
 *   newer libnfuse.so.1, and one built against a newer header fails to load on an older library
 *   with the name of the missing symbol instead of misbehaving. The library's ELF symbols carry a
 *   version node (NFUSE_1) so a future incompatible change can keep old callers on old code.
 *   NFUSE_API_VERSION is the header's level; nfuse_api_version() the library's.
 * - Enums: each input enum ends in an _ENUM_MAX sentinel (0x7FFFFFFF, as Vulkan does) so that
 *   any non-negative int a caller passes is a value of the type; unknown values are refused with
 *   NFUSE_INVALID_ARGUMENT, never undefined.
 * - Threads: a runtime, model and tensor may be shared between threads; one session runs one
 *   request at a time (calls on one session are serialised by the caller).
 */
#ifndef NFUSE_NFUSE_H_
#define NFUSE_NFUSE_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define NFUSE_API __declspec(dllimport)
#elif defined(__GNUC__)
#define NFUSE_API __attribute__((visibility("default")))
#else
#define NFUSE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The API level this header describes; raised by one with each release that appends symbols. */
#define NFUSE_API_VERSION 2

/* ---- status ---------------------------------------------------------------------------- */

typedef enum nfuse_status_code {
  NFUSE_OK = 0,
  NFUSE_INVALID_MODEL = 1,    /* the model file or graph is malformed */
  NFUSE_UNSUPPORTED = 2,      /* well-formed, but nfuse cannot run it */
  NFUSE_UNAVAILABLE = 3,      /* a device, library or file is not present */
  NFUSE_VERSION_MISMATCH = 4, /* a binary or model from an incompatible version */
  NFUSE_OUT_OF_MEMORY = 5,
  NFUSE_INVALID_ARGUMENT = 6, /* the caller passed something wrong */
  NFUSE_NOT_FOUND = 7,
  NFUSE_INTERNAL = 8,            /* a bug in nfuse */
  NFUSE_INCOMPATIBLE_DEVICE = 9, /* a context binary needs ISA features or backends this device lacks */
  NFUSE_CORRUPT_BINARY = 10,     /* a context binary fails a structural or checksum check */
  NFUSE_MODEL_MISMATCH = 11,     /* a context binary compiled from another model than the one given */
  NFUSE_DEADLINE_EXCEEDED = 12,  /* a request dropped because its deadline passed before it ran */
  NFUSE_CANCELLED = 13           /* a request abandoned: its runtime shut down or it was cancelled */
} nfuse_status_code;

typedef struct nfuse_status nfuse_status;

/* The code of `status`; NFUSE_OK for NULL. */
NFUSE_API nfuse_status_code nfuse_status_get_code(const nfuse_status* status);
/* The message of `status` ("" for NULL); owned by the status. */
NFUSE_API const char* nfuse_status_get_message(const nfuse_status* status);
/* Frees a status; NULL is a no-op. */
NFUSE_API void nfuse_status_release(nfuse_status* status);
/* A stable lower-case name of a code ("invalid argument"); never NULL. */
NFUSE_API const char* nfuse_status_code_name(nfuse_status_code code);

/* ---- version ----------------------------------------------------------------------------- */

/* The library's version, "MAJOR.MINOR.PATCH"; static storage. */
NFUSE_API const char* nfuse_version(void);
/* The library's API level (NFUSE_API_VERSION of the header it was built with). */
NFUSE_API uint32_t nfuse_api_version(void);

/* ---- enums ------------------------------------------------------------------------------- */

/* Element types. Values follow ONNX's TensorProto.DataType. */
typedef enum nfuse_dtype {
  NFUSE_DTYPE_UNDEFINED = 0,
  NFUSE_DTYPE_FLOAT32 = 1,
  NFUSE_DTYPE_UINT8 = 2,
  NFUSE_DTYPE_INT8 = 3,
  NFUSE_DTYPE_UINT16 = 4,
  NFUSE_DTYPE_INT16 = 5,
  NFUSE_DTYPE_INT32 = 6,
  NFUSE_DTYPE_INT64 = 7,
  NFUSE_DTYPE_BOOL = 9,
  NFUSE_DTYPE_FLOAT16 = 10,
  NFUSE_DTYPE_FLOAT64 = 11,
  NFUSE_DTYPE_UINT32 = 12,
  NFUSE_DTYPE_UINT64 = 13,
  NFUSE_DTYPE_BFLOAT16 = 16,
  NFUSE_DTYPE_ENUM_MAX = 0x7FFFFFFF
} nfuse_dtype;

/* Bytes per element of `dtype`; 0 for NFUSE_DTYPE_UNDEFINED and unknown values. */
NFUSE_API size_t nfuse_dtype_size(nfuse_dtype dtype);
/* "f32", "u8", ...; "undefined" for unknown values. */
NFUSE_API const char* nfuse_dtype_name(nfuse_dtype dtype);

/* The built-in backends. AUTO is the cost-model partitioner over all of them. */
typedef enum nfuse_backend {
  NFUSE_BACKEND_AUTO = 0,
  NFUSE_BACKEND_REF = 1,    /* the reference oracle: every op, plain scalar code */
  NFUSE_BACKEND_CPU = 2,    /* optimized kernels, any shape */
  NFUSE_BACKEND_FUSION = 3, /* fused groups executed depth-first in cache-sized strips */
  NFUSE_BACKEND_ENUM_MAX = 0x7FFFFFFF
} nfuse_backend;

/* "auto", "ref", "cpu", "fusion"; NULL for unknown values. */
NFUSE_API const char* nfuse_backend_name(nfuse_backend backend);

/* Whether a session describes its inputs or its outputs. */
typedef enum nfuse_io_kind {
  NFUSE_IO_INPUT = 0,
  NFUSE_IO_OUTPUT = 1,
  NFUSE_IO_KIND_ENUM_MAX = 0x7FFFFFFF
} nfuse_io_kind;

/* ---- runtime ----------------------------------------------------------------------------- */

typedef struct nfuse_runtime nfuse_runtime;

/* Log severities of messages sent to a runtime's log sink. */
typedef enum nfuse_log_level {
  NFUSE_LOG_VERBOSE = 0,
  NFUSE_LOG_INFO = 1,
  NFUSE_LOG_WARNING = 2,
  NFUSE_LOG_ERROR = 3,
  NFUSE_LOG_LEVEL_ENUM_MAX = 0x7FFFFFFF
} nfuse_log_level;
typedef void (*nfuse_log_fn)(void* user_data, nfuse_log_level level, const char* message);

/* A runtime: the backend registry, the log sink and the intra-op worker threads its sessions
 * share (one set of workers per thread count; sessions that run at once take turns on them). */
NFUSE_API nfuse_status* nfuse_runtime_create(nfuse_runtime** out);
NFUSE_API void nfuse_runtime_release(nfuse_runtime* runtime);
/* Messages at `min_level` or above go to `fn` (NULL: discarded, the default). What sessions log:
 * every rewrite of the optimization passes (VERBOSE) and the placement warnings (WARNING). */
NFUSE_API nfuse_status* nfuse_runtime_set_log_sink(nfuse_runtime* runtime, nfuse_log_level min_level, nfuse_log_fn fn,
                                                   void* user_data);
/* Registered backend names, sorted ("cpu", "fusion", "ref", ...). */
NFUSE_API nfuse_status* nfuse_runtime_backend_count(const nfuse_runtime* runtime, size_t* out);
NFUSE_API nfuse_status* nfuse_runtime_backend_name(const nfuse_runtime* runtime, size_t index, const char** out);

/* ---- model ------------------------------------------------------------------------------- */

typedef struct nfuse_model nfuse_model;

/* Imports an ONNX model from a file (external data resolved next to it). */
NFUSE_API nfuse_status* nfuse_model_load_file(nfuse_runtime* runtime, const char* path, nfuse_model** out);
/* Imports a serialized ONNX ModelProto from memory; the bytes are not retained. */
NFUSE_API nfuse_status* nfuse_model_load_memory(nfuse_runtime* runtime, const void* data, size_t size,
                                                nfuse_model** out);
NFUSE_API void nfuse_model_release(nfuse_model* model);

/* ---- context binaries (`nfuse compile`; API level 2) --------------------------------------
 * A context binary holds a model already optimized, with its plan options: loading it runs no
 * import and no optimization pass, and its weights are read in place from a read-only shared
 * mapping (sessions and processes that load one file share its pages). nfuse_model_load_file
 * and nfuse_model_load_memory accept one wherever they accept ONNX (recognised by its magic).
 * The load checks the header, the graph and the tensors; the prepacked weights are checked beside
 * it, on another CPU, and nfuse_session_create (or a dynamic-shape session's first run) waits for
 * that check: a corrupt prepacked weight is NFUSE_CORRUPT_BINARY from there, naming the section. */

typedef enum nfuse_compat_mode {
  NFUSE_COMPAT_PERMISSIVE = 0, /* load a suboptimal binary (warnings in the log) */
  NFUSE_COMPAT_STRICT = 1,     /* refuse it: NFUSE_INCOMPATIBLE_DEVICE with the reasons */
  NFUSE_COMPAT_MODE_ENUM_MAX = 0x7FFFFFFF
} nfuse_compat_mode;

typedef enum nfuse_context_validity {
  NFUSE_CONTEXT_VALID = 0,
  NFUSE_CONTEXT_SUBOPTIMAL = 1, /* runs, but was planned for what this device lacks */
  NFUSE_CONTEXT_INVALID = 2,    /* cannot be loaded here: the status says why, typed */
  NFUSE_CONTEXT_VALIDITY_ENUM_MAX = 0x7FFFFFFF
} nfuse_context_validity;

/* How this runtime's later loads treat a suboptimal binary (default PERMISSIVE). */
NFUSE_API nfuse_status* nfuse_runtime_set_context_compat(nfuse_runtime* runtime, nfuse_compat_mode mode);
/* Loads a context binary from memory the caller keeps alive and unchanged until every model and
 * session from it is released: nothing is copied. `data` must be 64-byte aligned. */
NFUSE_API nfuse_status* nfuse_model_load_context_buffer(nfuse_runtime* runtime, const void* data, size_t size,
                                                        nfuse_model** out);
/* *out = 1 when the model was loaded from a context binary, else 0. */
NFUSE_API nfuse_status* nfuse_model_is_context(const nfuse_model* model, int* out);
/* Reads only the prefix and header of the binary at `path` and judges it against this device
 * and build (and, with `source_model_path`, whether it was compiled from that file). Sets
 * *validity; *reasons (optional; free with nfuse_string_release) gets every reason, one per
 * line, or NULL when there is none. Returns NULL for valid and suboptimal binaries, and for an
 * invalid one its typed error (NFUSE_VERSION_MISMATCH, NFUSE_INCOMPATIBLE_DEVICE,
 * NFUSE_CORRUPT_BINARY, NFUSE_MODEL_MISMATCH, NFUSE_UNAVAILABLE). */
NFUSE_API nfuse_status* nfuse_context_check_file(const char* path, const char* source_model_path,
                                                 nfuse_context_validity* validity, char** reasons);
NFUSE_API void nfuse_string_release(char* s);

/* ---- session options --------------------------------------------------------------------- */

typedef struct nfuse_session_options nfuse_session_options;

/* Defaults: backend AUTO, 1 thread, optimization on, every output kept. */
NFUSE_API nfuse_status* nfuse_session_options_create(nfuse_session_options** out);
NFUSE_API void nfuse_session_options_release(nfuse_session_options* options);
NFUSE_API nfuse_status* nfuse_session_options_set_backend(nfuse_session_options* options, nfuse_backend backend);
/* Any registered backend by name (one that is not built in, too); "auto" is the partitioner. */
NFUSE_API nfuse_status* nfuse_session_options_set_backend_name(nfuse_session_options* options, const char* name);
/* Backend order for AUTO, most preferred first; the last is the fallback. count 0: the default. */
NFUSE_API nfuse_status* nfuse_session_options_set_preferred(nfuse_session_options* options, const nfuse_backend* order,
                                                            size_t count);
/* Runs the node named `node_or_op_type` (or every node of that op type) on `backend`. */
NFUSE_API nfuse_status* nfuse_session_options_add_pin(nfuse_session_options* options, const char* node_or_op_type,
                                                      nfuse_backend backend);
/* Keeps nodes of `op_type` off the preferred backends (they run on the fallback). */
NFUSE_API nfuse_status* nfuse_session_options_add_denial(nfuse_session_options* options, const char* op_type);
/* Intra-op threads, >= 1. */
NFUSE_API nfuse_status* nfuse_session_options_set_threads(nfuse_session_options* options, int threads);
/* Graph optimization passes on (default) or off (the graph runs as imported). */
NFUSE_API nfuse_status* nfuse_session_options_set_optimization(nfuse_session_options* options, int enabled);
/* Keeps only the named graph outputs (and what they need); call once per output. */
NFUSE_API nfuse_status* nfuse_session_options_add_output(nfuse_session_options* options, const char* name);
/* Session creation (or the first run, for symbolic shapes) fails, listing the nodes, when any
 * node would not run on the first preferred backend. */
NFUSE_API nfuse_status* nfuse_session_options_set_require_full_offload(nfuse_session_options* options, int enabled);
/* Output rows per strip of the fusion backend's groups; 0 (default) lets its cost model choose. */
NFUSE_API nfuse_status* nfuse_session_options_set_tile_rows(nfuse_session_options* options, int rows);
/* Device profiles for the partitioner's cost model (JSON written by `nfuse device-profile`);
 * NULL or "" restores the built-in defaults for this machine. */
NFUSE_API nfuse_status* nfuse_session_options_set_device_profile(nfuse_session_options* options, const char* path);

/* Builds the session's plan for these dims of input `name` at creation (API level 2), as a
 * static model's is: the time to plan and pack a model with symbolic dims moves out of its first
 * run, and errors surface at creation. Inputs not named keep their static dims; a symbolic one
 * not named fails creation. Calling again for a name replaces its dims. */
NFUSE_API nfuse_status* nfuse_session_options_set_input_shape(nfuse_session_options* options, const char* name,
                                                              const int64_t* dims, size_t rank);

/* ---- tensors ----------------------------------------------------------------------------- */

typedef struct nfuse_tensor nfuse_tensor;

/* A new tensor owning zero-filled, 64-byte-aligned memory. dims may be NULL when rank is 0. */
NFUSE_API nfuse_status* nfuse_tensor_create(nfuse_dtype dtype, const int64_t* dims, size_t rank, nfuse_tensor** out);
/* A tensor over the caller's memory (not copied; it must outlive the tensor). `byte_size` must be
 * exactly the product of dims times the element size. */
NFUSE_API nfuse_status* nfuse_tensor_wrap(nfuse_dtype dtype, const int64_t* dims, size_t rank, void* data,
                                          size_t byte_size, nfuse_tensor** out);
NFUSE_API void nfuse_tensor_release(nfuse_tensor* tensor);
NFUSE_API nfuse_status* nfuse_tensor_get_dtype(const nfuse_tensor* tensor, nfuse_dtype* out);
NFUSE_API nfuse_status* nfuse_tensor_get_rank(const nfuse_tensor* tensor, size_t* out);
/* Pointer to `rank` dims, owned by the tensor. */
NFUSE_API nfuse_status* nfuse_tensor_get_dims(const nfuse_tensor* tensor, const int64_t** out);
NFUSE_API nfuse_status* nfuse_tensor_get_byte_size(const nfuse_tensor* tensor, size_t* out);
/* The element buffer (writable for owned and wrapped tensors alike). */
NFUSE_API nfuse_status* nfuse_tensor_get_data(nfuse_tensor* tensor, void** out);
/* Reads a NumPy .npy file (C order, little-endian; formats 1.0-3.0) into a new owned tensor.
 * Malformed files are NFUSE_INVALID_ARGUMENT naming the file and the problem. */
NFUSE_API nfuse_status* nfuse_tensor_load_npy(const char* path, nfuse_tensor** out);
/* Writes a tensor as a .npy file (NFUSE_UNSUPPORTED for bfloat16, which NumPy does not name). */
NFUSE_API nfuse_status* nfuse_tensor_save_npy(const nfuse_tensor* tensor, const char* path);

/* ---- session ----------------------------------------------------------------------------- */

typedef struct nfuse_session nfuse_session;
typedef struct nfuse_run_options nfuse_run_options;

/* Optimizes `model` for the options (NULL: defaults) and checks every backend they name. The
 * session keeps its own copy of the graph: the model may be released afterwards. Plans are built
 * per input-shape signature on first use; for models without symbolic dims the plan is built here,
 * so placement errors surface now. */
NFUSE_API nfuse_status* nfuse_session_create(nfuse_runtime* runtime, const nfuse_model* model,
                                             const nfuse_session_options* options, nfuse_session** out);
NFUSE_API void nfuse_session_release(nfuse_session* session);
/* Saves the session's optimized graph and plan options, with the input shapes of the plans it
 * has built (a static model's at creation), as a context binary at `path` (API level 2).
 * `model` is the one the session was created from: its SHA-256 identifies the source. */
/* ---- zero-copy I/O (API level 2) --------------------------------------------------------
 * Bind caller memory to inputs and outputs once, run many times. Inputs are read in place.
 * An output is written in place when its buffer is 64-byte aligned, contiguous, of the output's
 * dtype and the dims the plan gives it (static shapes), and the op producing it writes its own
 * buffer; otherwise the run copies into it once and says why once per output (a WARNING in the
 * runtime's log) and counts the bytes (nfuse_session_get_copied_bytes). The bound memory must
 * outlive the binding; the tensor handles need not. */
NFUSE_API nfuse_status* nfuse_session_bind_input(nfuse_session* session, const char* name, const nfuse_tensor* tensor);
NFUSE_API nfuse_status* nfuse_session_bind_output(nfuse_session* session, const char* name, nfuse_tensor* tensor);
NFUSE_API nfuse_status* nfuse_session_clear_bindings(nfuse_session* session);
/* Runs with every input bound and writes every bound output. */
NFUSE_API nfuse_status* nfuse_session_run_bound(nfuse_session* session, const nfuse_run_options* run_options);
/* Bytes the last nfuse_session_run_bound copied from inputs and into outputs (0 and 0: zero-copy). */
NFUSE_API nfuse_status* nfuse_session_get_copied_bytes(const nfuse_session* session, uint64_t* input_bytes,
                                                       uint64_t* output_bytes);

/* The backend the session's plans use: its options' backend, or for a context binary the one it
 * was compiled for ("auto" for the partitioner). Owned by the session (API level 2). */
NFUSE_API nfuse_status* nfuse_session_backend(const nfuse_session* session, const char** out);
NFUSE_API nfuse_status* nfuse_session_save_context(const nfuse_session* session, const nfuse_model* model,
                                                   const char* path);

/* Metadata. A dim is either a value (>= 0, `symbol` NULL) or symbolic (value -1 and `symbol` its
 * name, or "" when the model leaves it unnamed). Names and symbols are owned by the session. */
NFUSE_API nfuse_status* nfuse_session_io_count(const nfuse_session* session, nfuse_io_kind kind, size_t* out);
NFUSE_API nfuse_status* nfuse_session_io_name(const nfuse_session* session, nfuse_io_kind kind, size_t index,
                                              const char** out);
NFUSE_API nfuse_status* nfuse_session_io_dtype(const nfuse_session* session, nfuse_io_kind kind, size_t index,
                                               nfuse_dtype* out);
/* Rank of the input or output; NFUSE_UNSUPPORTED when the model does not say. */
NFUSE_API nfuse_status* nfuse_session_io_rank(const nfuse_session* session, nfuse_io_kind kind, size_t index,
                                              size_t* out);
NFUSE_API nfuse_status* nfuse_session_io_dim(const nfuse_session* session, nfuse_io_kind kind, size_t index, size_t dim,
                                             int64_t* value, const char** symbol);

/* Per-request settings; NULL everywhere means the defaults (no profiling). */
NFUSE_API nfuse_status* nfuse_run_options_create(nfuse_run_options** out);
NFUSE_API void nfuse_run_options_release(nfuse_run_options* options);
/* Runs with these options time every node (two clock reads per node) into the session's profile. */
NFUSE_API nfuse_status* nfuse_run_options_set_profiling(nfuse_run_options* options, int enabled);

/* Runs the model. `input_names[i]` names `inputs[i]`; every model input must be given once, with
 * the model's dtype and a shape its static dims agree with. `output_names` selects outputs by
 * name, or NULL for every output in model order (then output_count must equal the output count).
 * outputs[i] receives a new tensor the caller owns. On error no output is set. */
NFUSE_API nfuse_status* nfuse_session_run(nfuse_session* session, const char* const* input_names,
                                          const nfuse_tensor* const* inputs, size_t input_count,
                                          const char* const* output_names, nfuse_tensor** outputs, size_t output_count,
                                          const nfuse_run_options* run_options);

/* The placement report (JSON text: every node's backend and why, partitions, transfers, fallback
 * ratios, warnings) of the plan the last run used, or, before any run, of the plan for the model's
 * input shapes with symbolic dims as 1. Owned by the session; valid until the next call. */
NFUSE_API nfuse_status* nfuse_session_placement_report(nfuse_session* session, const char** json);

/* Where the time of the profiled runs went, as JSON: {runs, ms_in_nodes, op_types: [{op_type,
 * backend, reference_kernel, nodes, ms_per_run}], nodes: [{node, backend, reference_kernel,
 * ms_per_run}]}, slowest first; per-run means over every profiled run since the last reset.
 * Owned by the session; valid until the next call. */
NFUSE_API nfuse_status* nfuse_session_profile(nfuse_session* session, const char** json);
/* Forgets the profiled runs. */
NFUSE_API nfuse_status* nfuse_session_profile_reset(nfuse_session* session);
/* The profiled runs since the last reset as a Chrome trace (API level 2): JSON that Perfetto and
 * chrome://tracing open, {"displayTimeUnit", "traceEvents"}: process and track names, then a
 * complete event per run (track "runs"), per partition (track "partitions": backend, nodes) and
 * per node (a track "ops on BACKEND" each: op type, reference kernel or not, output shapes, the
 * members a fused group ran with) and per intra-op worker (track "worker N": its busy span in each
 * parallel section, named by the node). Microseconds from the first run. Owned by the session; valid
 * until the next call. */
NFUSE_API nfuse_status* nfuse_session_trace(nfuse_session* session, const char** json);
/* Arena bytes one inference moves (graph inputs, outputs and intermediates; weights excluded), as
 * the plan of the last run executes them and as layer-by-layer execution would, exact, as JSON:
 * {arena_bytes_fused, arena_bytes_layerwise, fused_groups: [{label, nodes, tile_rows, fused_bytes,
 * layerwise_bytes, scratch_bytes}]}. Before any run: the plan for the default input shapes.
 * Owned by the session; valid until the next call. */
NFUSE_API nfuse_status* nfuse_session_traffic(nfuse_session* session, const char** json);
/* What the last successful run of the session executed and cost, read from that run, as one line
 * of JSON (API level 2): {run, wall_ms, cpu_seconds, backends: [{backend, ms, nodes,
 * reference_nodes}], nodes, reference_nodes, fallback_ratio, arena_bytes, input_bytes_copied,
 * output_bytes_copied}. run counts the session's runs (0: none yet); ms per backend is the wall
 * time of its partitions; fallback_ratio is the share of nodes that ran off the first-choice
 * backend or on reference kernels; cpu_seconds is the process's CPU time (every thread) during the
 * run. Owned by the session; valid until the next call. */
NFUSE_API nfuse_status* nfuse_session_last_run_stats(nfuse_session* session, const char** json);

/* ---- scheduling: requests, priorities, deadlines, fences, performance modes (API level 2) ----
 * A runtime runs the requests of all its sessions (of one thread count) on one dispatcher thread
 * and its workers, one unit of work at a time (an op, a fused group, or a partition that does not
 * split), each next unit going to the highest priority after aging: every 25 ms a ready request
 * waits raises it one level, up to one step above high (realtime is only ever asked for), and
 * running a unit resets its wait. nfuse_session_run and nfuse_session_run_bound are a submit
 * followed by a wait. A session's requests run one at a time, in submission order. */
typedef enum nfuse_priority {
  NFUSE_PRIORITY_LOW = 0,
  NFUSE_PRIORITY_NORMAL = 1, /* the default */
  NFUSE_PRIORITY_HIGH = 2,
  NFUSE_PRIORITY_REALTIME = 3,
  NFUSE_PRIORITY_ENUM_MAX = 0x7FFFFFFF
} nfuse_priority;

/* What each mode sets (written down in docs/runtime.md): burst (all threads, workers spin, the
 * dispatcher spins 2 ms idle), sustained_high_performance (all threads, workers spin within a
 * request, the dispatcher spins 100 us idle then sleeps; the default), balanced (half the
 * threads, nothing spins), power_saver (one thread, nothing spins, the dispatcher at nice 19). */
typedef enum nfuse_performance_mode {
  NFUSE_PERFORMANCE_BURST = 0,
  NFUSE_PERFORMANCE_SUSTAINED_HIGH_PERFORMANCE = 1,
  NFUSE_PERFORMANCE_BALANCED = 2,
  NFUSE_PERFORMANCE_POWER_SAVER = 3,
  NFUSE_PERFORMANCE_MODE_ENUM_MAX = 0x7FFFFFFF
} nfuse_performance_mode;

typedef struct nfuse_fence nfuse_fence;
typedef struct nfuse_request nfuse_request;

NFUSE_API nfuse_status* nfuse_runtime_set_performance_mode(nfuse_runtime* runtime, nfuse_performance_mode mode);
/* Whether the dispatcher and the workers each keep a CPU of their own (burst and
 * sustained_high_performance pin them by default, the other modes do not); 0 lets the OS place
 * them, as a process with several runtimes or its own pinned threads may want. */
NFUSE_API nfuse_status* nfuse_runtime_set_thread_pinning(nfuse_runtime* runtime, int enabled);
/* Records every request (submission, start, end, each unit, fence arrows, queue depth) from now
 * on (enabled) or stops (0); nfuse_runtime_trace returns them as a Chrome trace (JSON owned by
 * the runtime, valid until the next call). */
NFUSE_API nfuse_status* nfuse_runtime_set_tracing(nfuse_runtime* runtime, int enabled);
NFUSE_API nfuse_status* nfuse_runtime_trace(nfuse_runtime* runtime, const char** json);

NFUSE_API nfuse_status* nfuse_run_options_set_priority(nfuse_run_options* options, nfuse_priority priority);
/* A deadline `ms` after submission (0: none). A request finishing later is counted as missed
 * (nfuse_request_stats); with drop_if_late, one whose deadline passes before it starts is dropped
 * and fails with NFUSE_DEADLINE_EXCEEDED. */
NFUSE_API nfuse_status* nfuse_run_options_set_deadline(nfuse_run_options* options, double ms, int drop_if_late);
NFUSE_API nfuse_status* nfuse_run_options_set_performance_mode(nfuse_run_options* options, nfuse_performance_mode mode);
/* Nothing of a request with these options runs before `fence` is signalled; if it fails, the
 * request fails with its cause. The options keep the fence alive. */
NFUSE_API nfuse_status* nfuse_run_options_add_wait_fence(nfuse_run_options* options, const nfuse_fence* fence);
NFUSE_API nfuse_status* nfuse_run_options_clear_wait_fences(nfuse_run_options* options);
/* The name of requests with these options in the runtime's trace and errors (default: the
 * model's graph name). */
NFUSE_API nfuse_status* nfuse_run_options_set_label(nfuse_run_options* options, const char* label);

/* A fence the caller signals (a render frame, a camera buffer). */
NFUSE_API nfuse_status* nfuse_fence_create(const char* label, nfuse_fence** out);
NFUSE_API void nfuse_fence_release(nfuse_fence* fence);
/* Signal (or fail, with a message its waiters' errors quote) once; again: NFUSE_INVALID_ARGUMENT. */
NFUSE_API nfuse_status* nfuse_fence_signal(nfuse_fence* fence);
NFUSE_API nfuse_status* nfuse_fence_fail(nfuse_fence* fence, const char* message);
/* Waits up to timeout_us (< 0: for ever). *settled is 1 once signalled or failed, else 0; a
 * failed fence returns its cause as the status. */
NFUSE_API nfuse_status* nfuse_fence_wait(const nfuse_fence* fence, int64_t timeout_us, int* settled);

typedef void (*nfuse_request_done_fn)(void* user_data, nfuse_status_code code);
/* Queues a run and returns at once. The inputs' memory must stay unchanged until the request
 * settles (tensor handles may be released). `done`, when given, is called once on the dispatcher
 * thread after the request's fence is settled; it must not block. */
NFUSE_API nfuse_status* nfuse_session_submit(nfuse_session* session, const char* const* input_names,
                                             const nfuse_tensor* const* inputs, size_t input_count,
                                             const nfuse_run_options* run_options, nfuse_request_done_fn done,
                                             void* user_data, nfuse_request** out);
/* Releasing a request does not cancel it. */
NFUSE_API void nfuse_request_release(nfuse_request* request);
/* Blocks until the request settles; returns its error (NULL when it ran). */
NFUSE_API nfuse_status* nfuse_request_wait(nfuse_request* request);
/* A new handle on the request's fence (signalled when its outputs are written), for other
 * requests' options or the caller to wait on. */
NFUSE_API nfuse_status* nfuse_request_fence(const nfuse_request* request, nfuse_fence** out);
/* Output `index` (model order) of a request that ran, as a new tensor the caller owns. */
NFUSE_API nfuse_status* nfuse_request_output(nfuse_request* request, size_t index, nfuse_tensor** out);
/* One line of JSON about a settled request: {id, priority, status, queue_wait_ms, latency_ms,
 * busy_ms, units, longest_unit_ms, missed_deadline, run: the session's record of the run
 * (nfuse_session_last_run_stats) when it ran}. Owned by the request; valid until the next call. */
NFUSE_API nfuse_status* nfuse_request_stats(nfuse_request* request, const char** json);

/* ---- quantization ------------------------------------------------------------------------ */

/* Post-training static quantization of a float ONNX model into a standard QDQ ONNX model, with a
 * per-layer accuracy report: what `nfuse quantize` does (docs/quantization.md). */
typedef struct nfuse_quantize_options nfuse_quantize_options;

typedef enum nfuse_calibration_method {
  NFUSE_CALIBRATION_MINMAX = 0,
  NFUSE_CALIBRATION_PERCENTILE = 1,
  NFUSE_CALIBRATION_MSE = 2,
  NFUSE_CALIBRATION_ENTROPY = 3,
  NFUSE_CALIBRATION_SQNR = 4,
  NFUSE_CALIBRATION_AUTO = 5, /* per tensor, the method whose range its readers' outputs suffer least from */
  NFUSE_CALIBRATION_ENUM_MAX = 0x7FFFFFFF
} nfuse_calibration_method;
typedef enum nfuse_activation_scheme {
  NFUSE_ACTIVATIONS_U8 = 0, /* asymmetric uint8 */
  NFUSE_ACTIVATIONS_S8 = 1, /* symmetric int8 */
  NFUSE_ACTIVATIONS_ENUM_MAX = 0x7FFFFFFF
} nfuse_activation_scheme;
typedef enum nfuse_precision {
  NFUSE_PRECISION_INT8 = 0,
  NFUSE_PRECISION_INT16 = 1, /* W8A16: 16-bit activations */
  NFUSE_PRECISION_MIXED = 2, /* int8, promoting layers until the target cosine is met */
  NFUSE_PRECISION_ENUM_MAX = 0x7FFFFFFF
} nfuse_precision;
typedef enum nfuse_promotion {
  NFUSE_PROMOTE_FLOAT = 0,
  NFUSE_PROMOTE_INT16 = 1,
  NFUSE_PROMOTE_AUTO = 2, /* int16 where it takes back most of a layer's loss, else float (the default) */
  NFUSE_PROMOTE_ENUM_MAX = 0x7FFFFFFF
} nfuse_promotion;
typedef enum nfuse_weight_bits {
  NFUSE_WEIGHTS_INT8 = 0,
  NFUSE_WEIGHTS_INT4 = 1, /* weight-only MatMul / Gemm blocks (MatMulNBits); activations stay float */
  NFUSE_WEIGHTS_ENUM_MAX = 0x7FFFFFFF
} nfuse_weight_bits;
typedef enum nfuse_image_layout {
  NFUSE_IMAGE_NCHW = 0,
  NFUSE_IMAGE_NHWC = 1,
  NFUSE_IMAGE_LAYOUT_ENUM_MAX = 0x7FFFFFFF
} nfuse_image_layout;

/* Defaults as `nfuse quantize`: minmax, u8, int8, target cosine 0.99, promote auto, 1 thread. */
NFUSE_API nfuse_status* nfuse_quantize_options_create(nfuse_quantize_options** out);
NFUSE_API void nfuse_quantize_options_release(nfuse_quantize_options* options);
/* A folder of .npy inputs or PNG/JPEG images (required); limit 0 takes every file. */
NFUSE_API nfuse_status* nfuse_quantize_options_set_calibration_data(nfuse_quantize_options* options, const char* folder,
                                                                    int64_t limit);
/* A held-out folder the report is measured on (never used to choose anything); NULL: none. */
NFUSE_API nfuse_status* nfuse_quantize_options_set_evaluation_data(nfuse_quantize_options* options, const char* folder);
/* `percentile` is used by NFUSE_CALIBRATION_PERCENTILE only (0 < p <= 100). */
NFUSE_API nfuse_status* nfuse_quantize_options_set_method(nfuse_quantize_options* options,
                                                          nfuse_calibration_method method, double percentile);
NFUSE_API nfuse_status* nfuse_quantize_options_set_activations(nfuse_quantize_options* options,
                                                               nfuse_activation_scheme scheme);
/* `target_cosine` in (0, 1] and `promote` are used by NFUSE_PRECISION_MIXED only. */
NFUSE_API nfuse_status* nfuse_quantize_options_set_precision(nfuse_quantize_options* options, nfuse_precision precision,
                                                             double target_cosine, nfuse_promotion promote);
NFUSE_API nfuse_status* nfuse_quantize_options_set_weights(nfuse_quantize_options* options, nfuse_weight_bits bits);
NFUSE_API nfuse_status* nfuse_quantize_options_set_threads(nfuse_quantize_options* options, int threads);
/* Cross-layer equalization and bias correction (each off by default). */
NFUSE_API nfuse_status* nfuse_quantize_options_set_equalization(nfuse_quantize_options* options,
                                                                int cross_layer_equalization, int bias_correction);
/* Activation equalization (docs/quantization.md): NFUSE_EQUALIZE_AUTO (the default: on for 8-bit
 * activations), NFUSE_EQUALIZE_ACTIVATIONS (always) or NFUSE_EQUALIZE_NONE. */
typedef enum nfuse_activation_equalization {
  NFUSE_EQUALIZE_AUTO = 0,
  NFUSE_EQUALIZE_ACTIVATIONS = 1,
  NFUSE_EQUALIZE_NONE = 2
} nfuse_activation_equalization;
NFUSE_API nfuse_status* nfuse_quantize_options_set_activation_equalization(nfuse_quantize_options* options,
                                                                           nfuse_activation_equalization mode);
/* Where to write the per-layer report as JSON and as a self-contained HTML page (NULL: not written). */
NFUSE_API nfuse_status* nfuse_quantize_options_set_reports(nfuse_quantize_options* options, const char* json_path,
                                                           const char* html_path);
/* Image folders: resize to height x width (0, 0: the model input's static size), normalise as
 * (pixel - mean) / std per channel in 0..255 units (NULL: 0 and 255, i.e. [0, 1]), in `layout`. */
NFUSE_API nfuse_status* nfuse_quantize_options_set_image_preprocessing(nfuse_quantize_options* options, int64_t height,
                                                                       int64_t width, const float* mean3,
                                                                       const float* std3, nfuse_image_layout layout);
/* Quantizes the ONNX model at `model_path` into `output_path`. `summary` and `report_json` (either
 * may be NULL) receive what `nfuse quantize` prints and the per-layer report as JSON, owned by
 * `options` and valid until it is released or used again. Errors name the step that failed. */
NFUSE_API nfuse_status* nfuse_quantize(nfuse_runtime* runtime, const char* model_path, const char* output_path,
                                       nfuse_quantize_options* options, const char** summary, const char** report_json);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NFUSE_NFUSE_H_ */
