//! The assignment a classic consumer group's leader hands each member.

use std::sync::Arc;

use crate::TopicPartition;

/// A classic consumer's assignment (`ConsumerProtocolAssignment`, any version): an i16
/// version, then topics with their partitions; the user data after them is not read. Every
/// count is checked against the bytes left, so a hostile count allocates nothing.
pub(crate) fn decode_assignment(bytes: &[u8]) -> Option<Vec<TopicPartition>> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let mut cursor = Cursor { bytes };
    let _version = cursor.take::<2>()?;
    let topics = cursor.count(2)?;
    let mut assigned = Vec::new();
    for _ in 0..topics {
        let length = usize::try_from(i16::from_be_bytes(cursor.take::<2>()?)).ok()?;
        let topic: Arc<str> = Arc::from(std::str::from_utf8(cursor.slice(length)?).ok()?);
        for _ in 0..cursor.count(4)? {
            assigned.push(TopicPartition::new(
                topic.clone(),
                i32::from_be_bytes(cursor.take::<4>()?),
            ));
        }
    }
    assigned.sort();
    Some(assigned)
}

struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn slice(&mut self, length: usize) -> Option<&'a [u8]> {
        if length > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(length);
        self.bytes = rest;
        Some(head)
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.slice(N)?.try_into().ok()
    }

    /// An i32 count of elements at least `element` bytes long each.
    fn count(&mut self, element: usize) -> Option<usize> {
        let count = usize::try_from(i32::from_be_bytes(self.take::<4>()?)).ok()?;
        (count.checked_mul(element)? <= self.bytes.len()).then_some(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(version: i16, topics: &[(&str, &[i32])], tail: &[u8]) -> Vec<u8> {
        let mut bytes = version.to_be_bytes().to_vec();
        bytes.extend((topics.len() as i32).to_be_bytes());
        for (topic, partitions) in topics {
            bytes.extend((topic.len() as i16).to_be_bytes());
            bytes.extend(topic.as_bytes());
            bytes.extend((partitions.len() as i32).to_be_bytes());
            partitions
                .iter()
                .for_each(|p| bytes.extend(p.to_be_bytes()));
        }
        bytes.extend(tail);
        bytes
    }

    #[test]
    fn reads_a_classic_assignment_and_refuses_a_cut_or_hostile_one() {
        let bytes = assignment(3, &[("b", &[2, 0]), ("a", &[1])], &[0, 0, 0, 0]);
        let expected = vec![
            TopicPartition::new("a", 1),
            TopicPartition::new("b", 0),
            TopicPartition::new("b", 2),
        ];
        assert_eq!(decode_assignment(&bytes), Some(expected));
        assert_eq!(decode_assignment(&[]), Some(Vec::new()));
        let whole = assignment(0, &[("t", &[0, 1])], &[]);
        for cut in 1..whole.len() {
            assert_eq!(decode_assignment(&whole[..cut]), None, "cut at {cut}");
        }
        let hostile = [0, 0, 0x7f, 0xff, 0xff, 0xff];
        assert_eq!(decode_assignment(&hostile), None);
    }
}
