# lua-gpu: PyCUDA for Lua 5.4.
#   make            build gpu/core.so
#   make test       busted specs (GPU specs are pending without a device)
#   make test-gpu   busted's "gpu" run: every spec, and a missing device is a failure
#                   (SPECS=<files> for some of them)
#   make demo       the main example (compiles its kernel even without a GPU)
# Honours LUA, LUA_INCDIR, CUDA_HOME, CFLAGS, BUSTED.

LUA ?= lua5.4
LUA_INCDIR ?= $(firstword $(wildcard /usr/include/lua5.4 /usr/local/include/lua5.4) /usr/include/lua5.4)
CUDA_HOME ?= /usr/local/cuda
BUSTED ?= $(LUA) $(shell command -v busted)
CFLAGS ?= -O2 -g
WARNINGS = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
ALL_CFLAGS = -std=c11 -fPIC -fvisibility=hidden $(WARNINGS) $(CFLAGS)
# Debian's luaconf.h includes a header from the multiarch directory beside LUA_INCDIR.
MULTIARCH_INCDIR = $(wildcard $(LUA_INCDIR)/../$(shell $(CC) -dumpmachine))
CPPFLAGS += -I$(LUA_INCDIR) $(MULTIARCH_INCDIR:%=-I%) -I$(CUDA_HOME)/include -Ibuild -D_GNU_SOURCE
LDLIBS = -ldl -lpthread -lm

SOURCES = $(wildcard src/*.c)
OBJECTS = $(SOURCES:src/%.c=build/%.o)

# Paths that make the source tree usable without installing.
export LUA_PATH := $(CURDIR)/lua/?.lua;$(CURDIR)/lua/?/init.lua;$(CURDIR)/spec/?.lua;$(LUA_PATH);;
export LUA_CPATH := $(CURDIR)/?.so;$(LUA_CPATH);;

.PHONY: all test test-gpu demo clean

all: gpu/core.so

gpu/core.so: $(OBJECTS)
	@mkdir -p gpu
	$(CC) -shared -o $@ $(OBJECTS) $(LDFLAGS) $(LDLIBS)

build/%.o: src/%.c src/gpu.h | build
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c -o $@ $<

build/device.o: build/device_attributes.h
build/kernels.o: build/kernels.h

KERNELS = $(sort $(wildcard kernels/*.cu))
build/kernels.h: tools/embed.lua $(KERNELS) | build
	$(LUA) tools/embed.lua $@ $(foreach k,$(KERNELS),$(notdir $(k))=$(k))

# Every device attribute this toolkit's cuda.h names, as X(NAME) lines.
build/device_attributes.h: $(CUDA_HOME)/include/cuda.h | build
	sed -n 's/^ *CU_DEVICE_ATTRIBUTE_\([A-Z0-9_]*\) *= *[0-9].*/X(\1)/p' $< > $@

build:
	@mkdir -p build

# SPECS=spec/07-launch_spec.lua (or several) runs only those files
test: all fakecuda
	$(BUSTED) $(SPECS)

test-gpu: all fakecuda
	$(BUSTED) --run=gpu $(SPECS)

demo: all
	$(LUA) examples/vector_add.lua

clean:
	rm -rf build gpu

# Installing (the rockspec's `luarocks make` sets PREFIX, LIBDIR, LUADIR and INCDIR).
#   make install [PREFIX=/usr/local] [DESTDIR=...]
#   make deps       install the Debian packages the build and tests need (tools/deps.sh)
#   make examples   run every examples/*.lua; fails if any fails
LUA_VERSION ?= 5.4
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib/lua/$(LUA_VERSION)
LUADIR ?= $(PREFIX)/share/lua/$(LUA_VERSION)
INCDIR ?= $(PREFIX)/include
EMBED_HEADER = $(wildcard src/lua_gpu.h)

.PHONY: install deps examples

install: all
	install -d $(DESTDIR)$(LIBDIR)/gpu $(DESTDIR)$(LUADIR)/gpu
	install -m 755 gpu/core.so $(DESTDIR)$(LIBDIR)/gpu/core.so
	install -m 644 $(wildcard lua/gpu/*.lua) $(DESTDIR)$(LUADIR)/gpu/
ifneq ($(EMBED_HEADER),)
	install -d $(DESTDIR)$(INCDIR)
	install -m 644 $(EMBED_HEADER) $(DESTDIR)$(INCDIR)/lua_gpu.h
	install -m 644 src/dlpack.h $(DESTDIR)$(INCDIR)/lua_gpu_dlpack.h
endif

# For C hosts: the public headers and the static archive (docs/embedding.md).
install-static: static install
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 644 build/liblua-gpu.a $(DESTDIR)$(PREFIX)/lib/liblua-gpu.a
.PHONY: install-static

deps:
	bash tools/deps.sh

EXAMPLES = $(sort $(wildcard examples/*.lua))
examples: all
	@failed=; for example in $(EXAMPLES); do \
	  echo "== $$example"; \
	  $(LUA) $$example || failed="$$failed $$example"; \
	done; \
	if [ -n "$$failed" ]; then echo "examples that failed:$$failed" >&2; exit 1; fi

# Benchmarks (issue 4): the raw driver-API reference, a wall clock for Lua, then the suite.
#   make bench      BENCH_LOG2N=n shrinks sizes, BENCH_ONLY=<Lua pattern> picks figures,
#                   BENCH_PEERS=0 skips CuPy/PyTorch.  Writes bench/RESULTS.md (and $OUT/),
#                   or RESULTS-partial.md for a BENCH_ONLY run.
.PHONY: bench bench-build
bench-build: gpu/core.so build/bench-raw build/bench_clock.so

build/bench-raw: bench/raw.c | build
	$(CC) -std=c11 -D_GNU_SOURCE $(WARNINGS) $(CFLAGS) -I$(CUDA_HOME)/include \
	  -DBENCH_CUDA_LIB64='"$(CUDA_HOME)/lib64"' -o $@ $< -ldl -lm

build/bench_clock.so: bench/clock.c | build
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -shared -o $@ $< -ldl

bench: bench-build
	$(LUA) bench/run.lua

# A stand-in libcuda that runs nothing, to time the binding's own cost without a GPU:
#   make fakecuda bench-build && GPU_CUDA_LIBRARY=$PWD/build/libfakecuda.so \
#     lua5.4 tools/small_add_parts.lua
.PHONY: fakecuda
fakecuda: build/libfakecuda.so build/libfakecublas.so build/libfakecufft.so build/libfakecusolver.so
build/libfakecuda.so: tools/fakecuda.c | build
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -shared -o $@ $<
# and a stand-in libcublas on it, which spec/38 checks matmul's cuBLAS layouts against
build/libfakecublas.so: tools/fakecublas.c tools/fake_lu.h | build
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -shared -o $@ $<
# and a stand-in libcufft, which spec/53 checks the transforms' plans against
build/libfakecufft.so: tools/fakecufft.c | build
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -shared -o $@ $< -lm
# and a stand-in libcusolver, which spec/54 checks gpu.linalg's calls against
build/libfakecusolver.so: tools/fakecusolver.c tools/fake_lu.h | build
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -shared -o $@ $< -lm

# ---------------------------------------------------------------- embedding (docs/embedding.md)
#   make static         build/liblua-gpu.a: the module (C core and Lua layer) for C hosts
#   make embed-example  build/embed-host from examples/embed/host.c
#   make embed-run      runs it (without a GPU it says so and exits 0)
# LUA_LIB is the host's Lua: Debian's static liblua5.4.a beside LUA_INCDIR (also in the GPU
# machine's .devprefix), else -llua5.4.
LUA_LIB ?= $(firstword $(wildcard $(LUA_INCDIR)/../../lib/$(shell $(CC) -dumpmachine)/liblua5.4.a $(LUA_INCDIR)/../../lib/liblua5.4.a) -llua5.4)
LUA_MODULES = $(sort $(wildcard lua/gpu/*.lua lua/gpu/*/*.lua))

.PHONY: static embed-example embed-run

build/embed.o: build/lua_modules.h src/lua_gpu.h
build/dlpack.o: src/dlpack.h src/lua_gpu.h
build/lua_modules.h: tools/embed.lua $(LUA_MODULES) | build
	$(LUA) tools/embed.lua $@ $(foreach m,$(LUA_MODULES),$(m)=$(m))

static: build/liblua-gpu.a

build/liblua-gpu.a: $(OBJECTS)
	rm -f $@
	$(AR) rcs $@ $(OBJECTS)

embed-example: build/embed-host

build/embed-host: examples/embed/host.c src/lua_gpu.h src/dlpack.h build/liblua-gpu.a
	$(CC) $(CPPFLAGS) -Isrc -std=c11 $(WARNINGS) $(CFLAGS) -o $@ $< build/liblua-gpu.a $(LUA_LIB) $(LDLIBS)

embed-run: build/embed-host
	build/embed-host

# The C host the embedding specs drive (spec/50-embed_spec.lua, spec/51-dlpack_spec.lua).
build/embed-test: spec/embed_test.c src/lua_gpu.h src/dlpack.h build/liblua-gpu.a
	$(CC) $(CPPFLAGS) -Isrc -std=c11 $(WARNINGS) $(CFLAGS) -o $@ $< build/liblua-gpu.a $(LUA_LIB) $(LDLIBS)

# The public headers compile on their own, with Lua's headers only (no cuda.h).
embed-check-headers:
	$(CC) -I$(LUA_INCDIR) $(MULTIARCH_INCDIR:%=-I%) -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c src/lua_gpu.h
	$(CC) -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c src/dlpack.h
.PHONY: embed-check-headers

# ---------------------------------------------------------------- reliability (docs/testing.md)
#   make fuzz        random calls of the whole API against an ASan+UBSan build (FUZZ_SECONDS,
#                    FUZZ_SEED, FUZZ_GPU=1 on the GPU machine)
#   make leakcheck   the CPU suite under valgrind; fails on a definite leak from the module
#   make threads     N OS threads, each with its own lua_State, on one GPU (THREADS, SECONDS)
#   make sanitize    the GPU suite under compute-sanitizer memcheck
.PHONY: asan fuzz leakcheck threads threads-capture sanitize

ASAN_DIR = build/asan
ASAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_OBJECTS = $(SOURCES:src/%.c=$(ASAN_DIR)/%.o)
ASAN_RUNTIME = $(shell $(CC) -print-file-name=libasan.so)
FUZZ_SECONDS ?= 30
FUZZ_ENV = LD_PRELOAD=$(ASAN_RUNTIME) \
  ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1:max_allocation_size_mb=2048:protect_shadow_gap=0 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  LUA_CPATH="$(CURDIR)/$(ASAN_DIR)/?.so;$(LUA_CPATH)"

asan: $(ASAN_DIR)/gpu/core.so

$(ASAN_DIR)/gpu/core.so: $(ASAN_OBJECTS)
	@mkdir -p $(ASAN_DIR)/gpu
	$(CC) -shared $(ASAN_FLAGS) -o $@ $(ASAN_OBJECTS) $(LDFLAGS) $(LDLIBS)

$(ASAN_DIR)/%.o: src/%.c src/gpu.h build/device_attributes.h build/kernels.h
	@mkdir -p $(ASAN_DIR)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -O1 $(ASAN_FLAGS) -c -o $@ $<

# the generated and public headers the build's own objects depend on (see build/embed.o)
$(ASAN_DIR)/embed.o: build/lua_modules.h src/lua_gpu.h
$(ASAN_DIR)/dlpack.o: src/dlpack.h src/lua_gpu.h

# Sanitizer reports end the run with a non-zero status (halt_on_error); so does a bad error.
fuzz: asan
	$(FUZZ_ENV) timeout --signal=KILL $$(( $(FUZZ_SECONDS) + 120 )) $(LUA) tests/fuzz.lua $(FUZZ_SECONDS)

# The CPU suite, then a short CPU fuzz (error paths), under valgrind; child Lua processes of
# the specs are traced too.  Any definite leak or memory error fails.
LEAK_FUZZ_SECONDS ?= 20
VALGRIND = valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite \
  --show-leak-kinds=definite --error-exitcode=99 --num-callers=40 \
  --suppressions=tests/leakcheck.supp --trace-children=yes \
  --trace-children-skip='*/env,*/sh,*/bash,*/mkdir,*/rm,*/timeout'

# Left out under valgrind, where they would take many minutes: #slow specs (pure Lua models of
# kernels), #nvrtc specs (uncached compiles, ~20 s each there; the compile path is still
# covered by 05-compile's first specs and by the fuzz run's compiles) and #cxx specs (they run
# a C++ compiler, which valgrind would trace).
leakcheck: all
	$(VALGRIND) $(BUSTED) --exclude-tags=slow,nvrtc,cxx
	FUZZ_COMPILES=3 $(VALGRIND) $(LUA) tests/fuzz.lua $(LEAK_FUZZ_SECONDS)

# tests/threads links Lua itself, through LUA_LIB (see the embedding section), and exports
# its symbols (-Wl,-E) for the gpu/core.so it loads.
THREADS ?= 8
SECONDS ?= 60
LUA_LIBDIR ?= $(firstword $(wildcard $(LUA_INCDIR)/../../lib/$(shell $(CC) -dumpmachine)))
THREADS_CACHE = build/threads-cache

build/threads: tests/threads.c | build
	$(CC) $(CPPFLAGS) -std=c11 $(WARNINGS) $(CFLAGS) -Wl,-E -o $@ $< $(LUA_LIBDIR:%=-L%) $(LUA_LIB) -lpthread -lm -ldl

# A fresh compile cache, so threads race to fill it; then a state closed at process exit.
threads: all build/threads
	rm -rf $(THREADS_CACHE)
	GPU_CACHE_DIR=$(CURDIR)/$(THREADS_CACHE) build/threads -n $(THREADS) -t $(SECONDS)
	build/threads --at-exit before tests/exit_worker.lua
	build/threads --at-exit after tests/exit_worker.lua

# Graph captures racing other threads' work and device synchronizations.
threads-capture: all build/threads
	build/threads -n 4 -t $(SECONDS) -w tests/capture_worker.lua

# The GPU suite under compute-sanitizer's memcheck (the #faults specs provoke errors on
# purpose and are left out).  Only the device's memory is checked; API errors are not reported
# because counting a kernel's parameters probes cuFuncGetParamInfo one past the last.
COMPUTE_SANITIZER ?= $(firstword $(wildcard $(CUDA_HOME)/bin/compute-sanitizer) compute-sanitizer)
sanitize: all
	$(COMPUTE_SANITIZER) --tool memcheck --error-exitcode 1 --target-processes all \
	  --report-api-errors no $(BUSTED) --run=gpu --exclude-tags=faults $(SPECS)
