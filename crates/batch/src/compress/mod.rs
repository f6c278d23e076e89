//! Compression of a batch's records into a pooled buffer, one module per codec, each written
//! the way Kafka's Java producer writes it (so every Kafka reader takes it): gzip as one
//! member, snappy in xerial framing, LZ4 as one frame of independent 64 KiB blocks, zstd as
//! one frame. Compressor state (deflate, zstd contexts, match tables) is kept per thread,
//! like the decompressors', so a warm thread compresses into a warm buffer without allocating.

mod gzip;
mod snappy;
mod zstd;

use crate::buffer::PooledBuf;
use crate::{Compression, Error};

/// A codec and its level: what a producer's `compression.type` and
/// `compression.<codec>.level` choose. Levels are checked against the ranges Kafka's Java
/// client accepts.
///
/// ```
/// use krec_batch::{Codec, Compression};
/// assert_eq!(Codec::new(Compression::Zstd).level(), Some(3));
/// assert_eq!(Codec::zstd(19).unwrap().level(), Some(19));
/// assert!(Codec::gzip(12).is_err());
/// assert_eq!(Codec::NONE.compression(), Compression::None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codec {
    compression: Compression,
    level: i32,
}

impl Codec {
    /// No compression.
    pub const NONE: Codec = Codec {
        compression: Compression::None,
        level: 0,
    };
    /// Snappy (Kafka has no snappy level).
    pub const SNAPPY: Codec = Codec {
        compression: Compression::Snappy,
        level: 0,
    };
    /// `compression.gzip.level` by default: -1, zlib's default (6).
    pub const GZIP_DEFAULT_LEVEL: i32 = -1;
    /// `compression.lz4.level` by default.
    pub const LZ4_DEFAULT_LEVEL: i32 = 9;
    /// `compression.zstd.level` by default.
    pub const ZSTD_DEFAULT_LEVEL: i32 = 3;

    /// `compression` at Kafka's default level for it.
    pub fn new(compression: Compression) -> Codec {
        let level = match compression {
            Compression::Gzip => Self::GZIP_DEFAULT_LEVEL,
            Compression::Lz4 => Self::LZ4_DEFAULT_LEVEL,
            Compression::Zstd => Self::ZSTD_DEFAULT_LEVEL,
            Compression::None | Compression::Snappy => 0,
        };
        Codec { compression, level }
    }

    /// gzip at `level`: 1 to 9, or -1 for zlib's default (6).
    pub fn gzip(level: i32) -> Result<Codec, Error> {
        if level == Self::GZIP_DEFAULT_LEVEL {
            return Ok(Codec::new(Compression::Gzip));
        }
        Self::leveled(Compression::Gzip, level, 1, 9)
    }

    /// LZ4 at `level`: 1 to 17. Checked as Kafka checks it; krec compresses at every level
    /// with liblz4's fast compressor, what the Java client uses at the default level (other
    /// levels make Java use LZ4's high-compression mode, which krec does not).
    pub fn lz4(level: i32) -> Result<Codec, Error> {
        Self::leveled(Compression::Lz4, level, 1, 17)
    }

    /// zstd at `level`: -131072 (zstd's fastest) to 22.
    pub fn zstd(level: i32) -> Result<Codec, Error> {
        Self::leveled(Compression::Zstd, level, -131_072, 22)
    }

    fn leveled(compression: Compression, level: i32, min: i32, max: i32) -> Result<Codec, Error> {
        if (min..=max).contains(&level) {
            Ok(Codec { compression, level })
        } else {
            Err(Error::InvalidCompressionLevel {
                codec: compression,
                level,
                min,
                max,
            })
        }
    }

    /// The codec.
    pub fn compression(self) -> Compression {
        self.compression
    }

    /// The level, for the codecs that have one (gzip, LZ4, zstd).
    pub fn level(self) -> Option<i32> {
        match self.compression {
            Compression::Gzip | Compression::Lz4 | Compression::Zstd => Some(self.level),
            Compression::None | Compression::Snappy => None,
        }
    }
}

impl Default for Codec {
    fn default() -> Self {
        Codec::NONE
    }
}

/// Appends `input` compressed with `codec` to `out`; with no codec, `input` itself.
pub(crate) fn compress_into(codec: Codec, input: &[u8], out: &mut PooledBuf) -> Result<(), Error> {
    match codec.compression {
        Compression::None => out.extend_from_slice(input),
        Compression::Gzip => gzip::compress(input, codec.level, out)?,
        Compression::Snappy => snappy::compress(input, out)?,
        Compression::Lz4 => {
            krec_lz4::encode_frame_into_pooled(input, &krec_lz4::EncodeOptions::default(), out)
        }
        Compression::Zstd => zstd::compress(input, codec.level, out)?,
    }
    Ok(())
}
