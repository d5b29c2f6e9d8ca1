//! The keyed hash of `--hash-key`: HMAC-SHA256 (RFC 2104) over the `sha2` crate, truncated to
//! 32 bits in placeholders. The same secret gets the same tag across a dataset; without the key
//! the tag says nothing of the secret.

use sha2::{Digest, Sha256};

const BLOCK: usize = 64;

/// An HMAC-SHA256 key, with its inner and outer pads already hashed.
#[derive(Clone)]
pub struct HashKey {
    inner: Sha256,
    outer: Sha256,
}

impl std::fmt::Debug for HashKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashKey(..)")
    }
}

impl HashKey {
    /// The key `key` (any length; longer than a block, it is hashed first).
    pub fn new(key: &[u8]) -> HashKey {
        let mut block = [0u8; BLOCK];
        if key.len() > BLOCK {
            block[..32].copy_from_slice(&Sha256::digest(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let pad = |byte: u8| {
            let mut h = Sha256::new();
            h.update(block.map(|b| b ^ byte));
            h
        };
        HashKey {
            inner: pad(0x36),
            outer: pad(0x5c),
        }
    }

    /// HMAC-SHA256 of `message`.
    pub fn mac(&self, message: &[u8]) -> [u8; 32] {
        let mut inner = self.inner.clone();
        inner.update(message);
        let mut outer = self.outer.clone();
        outer.update(inner.finalize());
        outer.finalize().into()
    }

    /// The first 4 bytes of the MAC of `message`, as 8 lowercase hex digits.
    pub fn tag(&self, message: &[u8]) -> String {
        self.mac(message)[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// RFC 4231, test cases 2 (short key) and 6 (key longer than a block).
    #[test]
    fn matches_the_rfc_4231_vectors() {
        let key = HashKey::new(b"Jefe");
        assert_eq!(
            hex(&key.mac(b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let long = HashKey::new(&[0xaa; 131]);
        assert_eq!(
            hex(&long.mac(b"Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        assert_eq!(key.tag(b"what do ya want for nothing?"), "5bdcc146");
    }
}
