//! A text's tokens: what a tokenizer makes, trajkit's own encoder ([`super::bpe`]) and the
//! library's alike.

/// A text's tokens.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Token ids.
    pub ids: Vec<u32>,
    /// Each token's byte range in the text.
    pub offsets: Vec<(usize, usize)>,
}
