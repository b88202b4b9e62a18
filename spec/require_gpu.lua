-- Loaded by `busted --run=gpu`: GPU specs must run, so a missing device fails them.
GPU_SPECS_REQUIRE_DEVICE = true
