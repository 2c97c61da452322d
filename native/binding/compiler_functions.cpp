// Run-time compilation (device/compiler.h): what compiler there is, and compiling on a
// worker thread, as a promise (compiling takes from a tenth of a second to seconds).
#include "compiler_functions.h"

#include "../device/compiler.h"
#include "args.h"
#include "export.h"

namespace cca::binding {

namespace {

Napi::Value CompilerInfoOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CompilerInfo c = compiler_info();
  Napi::Object o = Napi::Object::New(env);
  o.Set("available", c.available);
  o.Set("reason", c.reason);
  o.Set("path", c.path);
  o.Set("version", c.available ? std::to_string(c.major) + "." + std::to_string(c.minor) : std::string());
  Napi::Array archs = Napi::Array::New(env, c.architectures.size());
  for (std::size_t i = 0; i < c.architectures.size(); ++i) archs.Set(static_cast<uint32_t>(i), c.architectures[i]);
  o.Set("architectures", archs);
  return o;
}

std::vector<std::string> strings_arg(const Napi::CallbackInfo& info, std::size_t i, const char* name) {
  if (i >= info.Length() || !info[i].IsArray()) {
    throw InvalidArgumentError(std::string("Expected an array of strings for ") + name, "ERR_INVALID_ARG_TYPE");
  }
  Napi::Array a = info[i].As<Napi::Array>();
  std::vector<std::string> out;
  for (uint32_t k = 0; k < a.Length(); ++k) {
    Napi::Value v = a.Get(k);
    if (!v.IsString()) throw InvalidArgumentError(std::string("Expected strings in ") + name, "ERR_INVALID_ARG_TYPE");
    out.push_back(v.As<Napi::String>().Utf8Value());
  }
  return out;
}

class CompileWorker : public Napi::AsyncWorker {
 public:
  CompileWorker(Napi::Env env, CompileRequest request)
      : Napi::AsyncWorker(env, "cca.compile"), request_(std::move(request)), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override { result_ = compile(request_); }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("ok", result_.ok);
    o.Set("error", result_.error);
    o.Set("log", result_.log);
    Napi::Uint8Array image = Napi::Uint8Array::New(env, result_.image.size());
    std::copy(result_.image.begin(), result_.image.end(), image.Data());
    o.Set("image", image);
    Napi::Array lowered = Napi::Array::New(env, result_.lowered.size());
    for (std::size_t i = 0; i < result_.lowered.size(); ++i) {
      Napi::Array pair = Napi::Array::New(env, 2);
      pair.Set(0u, result_.lowered[i].first);
      pair.Set(1u, result_.lowered[i].second);
      lowered.Set(static_cast<uint32_t>(i), pair);
    }
    o.Set("lowered", lowered);
    deferred_.Resolve(o);
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  CompileRequest request_;
  CompileResult result_;
  Napi::Promise::Deferred deferred_;
};

// compile(source, name, options[], headerNames[], headerSources[], nameExpressions[], cubin)
//   -> Promise<{ ok, error, log, image: Uint8Array, lowered: [expression, name][] }>
Napi::Value Compile(const Napi::CallbackInfo& info) {
  CompileRequest r;
  r.source = string_arg(info, 0, "source");
  r.name = string_arg(info, 1, "name");
  r.options = strings_arg(info, 2, "options");
  const std::vector<std::string> names = strings_arg(info, 3, "headerNames");
  const std::vector<std::string> sources = strings_arg(info, 4, "headerSources");
  if (names.size() != sources.size()) {
    throw InvalidArgumentError("Expected as many header sources as header names", "ERR_INVALID_ARG_VALUE");
  }
  for (std::size_t i = 0; i < names.size(); ++i) r.headers.emplace_back(names[i], sources[i]);
  r.name_expressions = strings_arg(info, 5, "nameExpressions");
  r.cubin = bool_arg(info, 6, "cubin");
  auto* worker = new CompileWorker(info.Env(), std::move(r));
  Napi::Promise promise = worker->promise();
  worker->Queue();
  return promise;
}

}  // namespace

void register_compiler_functions(Napi::Env env, Napi::Object exports) {
  export_function<CompilerInfoOf>(env, exports, "compilerInfo");
  export_function<Compile>(env, exports, "compile");
}

}  // namespace cca::binding
