//! The tokenizer-file loader: the fuzz bytes as a `tokenizer.json` and, after a `\n%%\n`, a
//! text to encode with it. Loading refuses what it must (an error), and a tokenizer that loads
//! encodes any text without a panic escaping: ids and offsets pair up, offsets lie within the
//! text, and the count is the encoding's length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trajkit::training::TokenizerFile;
use trajkit_fuzz::split_once;

const TEXTS: &[&str] = &[
    "<|im_start|>user\nHello, world!<|im_end|>\n",
    " two  spaces\tand é中😀 ",
];

fuzz_target!(|data: &[u8]| {
    let (file, text) = split_once(data, b"\n%%\n");
    let Ok(file) = std::str::from_utf8(file) else {
        return;
    };
    let Ok(tokenizer) = TokenizerFile::from_json(file) else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    for text in TEXTS.iter().copied().chain([text.as_ref()]) {
        let Ok(tokens) = tokenizer.encode(text) else {
            continue;
        };
        assert_eq!(tokens.ids.len(), tokens.offsets.len());
        for &(a, b) in &tokens.offsets {
            assert!(
                a <= b && b <= text.len(),
                "offsets ({a}, {b}) of a text of {}",
                text.len()
            );
        }
        if let Ok(n) = tokenizer.count(text) {
            assert_eq!(n, tokens.ids.len(), "count and encode disagree");
        }
    }
});
