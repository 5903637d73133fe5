//! libFuzzer over irqlab_fuzz::ringbuf_page (the body the stable runner and the corpus test run too).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| irqlab_fuzz::ringbuf_page(data));
