//! libFuzzer over irqlab_fuzz::proc_interrupts (the body the stable runner and the corpus test run too).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| irqlab_fuzz::proc_interrupts(data));
