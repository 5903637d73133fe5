//! libFuzzer over irqlab_fuzz::sweep_shard (the body the stable runner and the corpus test run too).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| irqlab_fuzz::sweep_shard(data));
