//! The framer over any bytes, in each layout: it ends, every frame consumes input, and a clean
//! frame's bytes are the input's own bytes at its offset.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trajkit::ingest::{Framer, LayoutHint};

fuzz_target!(|data: &[u8]| {
    for hint in [LayoutHint::Lines, LayoutHint::Json, LayoutHint::Sniff] {
        let mut frames = 0usize;
        for frame in Framer::new(data, hint, 64) {
            frames += 1;
            assert!(
                frames <= data.len() + 1,
                "more frames than bytes ({hint:?})"
            );
            if frame.error.is_none() {
                let at = usize::try_from(frame.offset).expect("offset fits");
                assert_eq!(data.get(at..at + frame.bytes.len()), Some(&frame.bytes[..]));
            }
        }
    }
});
