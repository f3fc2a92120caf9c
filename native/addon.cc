// Module entry: exports the Engine class and the build facts.
#include <napi.h>

#include "engine.h"

Napi::Object InitAddon(Napi::Env env, Napi::Object exports) { return arbitra::Engine::Init(env, exports); }

NODE_API_MODULE(arbitra, InitAddon)
