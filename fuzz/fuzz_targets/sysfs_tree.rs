//! libFuzzer over irqlab_fuzz::sysfs_tree (the body the stable runner and the corpus test run too).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| irqlab_fuzz::sysfs_tree(data));
