//! The keyed half of Kafka's default partitioner: a keyed record goes where murmur2 of its
//! key says, byte-compatible with the Java client and librdkafka's `murmur2_random`, so a key
//! lands on the same partition whichever client produced it. The in-process producer and
//! the external-cluster client both place keys with it.

/// The partition a record goes to when the topic has no partition to choose from, as Kafka's
/// `RecordMetadata.UNKNOWN_PARTITION`.
pub const UNKNOWN_PARTITION: i32 = -1;

/// Java's `Utils.murmur2`: MurmurHash2, 32 bits, with Kafka's fixed seed.
pub fn murmur2(data: &[u8]) -> u32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    // Java hashes an int length; keys beyond 4 GiB cannot exist there, so truncating is faithful.
    let mut h = SEED ^ data.len() as u32;
    let (words, tail) = data.as_chunks::<4>();
    for word in words {
        let mut k = u32::from_le_bytes(*word);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    // Java's fall-through switch over the 1-3 trailing bytes XORs them in as a little-endian word
    // padded with zeros, then mixes once.
    if !tail.is_empty() {
        let mut word = [0u8; 4];
        word[..tail.len()].copy_from_slice(tail);
        h ^= u32::from_le_bytes(word);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

/// The partition of a keyed record: Kafka masks the sign bit (`Utils.toPositive`) rather than
/// taking the absolute value, and so must we to agree with every other client.
/// A topic without partitions gives [`UNKNOWN_PARTITION`].
pub fn partition_for_key(key: &[u8], num_partitions: i32) -> i32 {
    if num_partitions <= 0 {
        return UNKNOWN_PARTITION;
    }
    (murmur2(key) as i32 & 0x7fff_ffff) % num_partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_the_java_client_and_librdkafka() {
        let vectors: [(&[u8], u32); 8] = [
            (b"kafka", 0xd067_cf64),
            (b"giberish123456789", 0x8f55_2b0c),
            (b"1234", 0x9fc9_7b14),
            (b"234", 0xe7c0_09ca),
            (b"34", 0x8739_30da),
            (b"4", 0x5a4b_5ca1),
            (b"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x7842_4f1c),
            (b"", 0x106e_08d9),
        ];
        for (key, hash) in vectors {
            assert_eq!(murmur2(key), hash, "murmur2({:?})", String::from_utf8_lossy(key));
        }
    }

    /// The vectors of Kafka's own `UtilsTest.testMurmur2`, which states them as Java ints.
    #[test]
    fn murmur2_matches_the_kafka_utils_test_vectors() {
        let vectors: [(&[u8], i32); 6] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
            (b"abc", 479_470_107),
        ];
        for (key, hash) in vectors {
            assert_eq!(murmur2(key) as i32, hash, "murmur2({:?})", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn a_key_always_maps_to_the_partition_the_java_client_picks() {
        assert_eq!(partition_for_key(b"kafka", 6), 4);
    }

    #[test]
    fn a_negative_hash_is_made_positive_by_masking_the_sign_bit_not_by_abs() {
        // murmur2("21") is negative as a Java int: masking gives 1173551340, abs 973932308,
        // which fall on different partitions of a 7-partition topic.
        assert_eq!(murmur2(b"21") as i32, -973_932_308);
        assert_eq!(partition_for_key(b"21", 7), 1_173_551_340 % 7);
        assert_ne!(partition_for_key(b"21", 7), 973_932_308 % 7);
    }

    #[test]
    fn a_topic_without_partitions_has_no_partition_for_a_key() {
        assert_eq!(partition_for_key(b"kafka", 0), UNKNOWN_PARTITION);
    }
}
