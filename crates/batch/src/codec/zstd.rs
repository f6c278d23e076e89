//! zstd frames, with or without a content size, through one decompression context per thread.
//!
//! Producers write frames without a content size (librdkafka and the Java client's zstd-jni
//! both compress as a stream). Streaming decompression of such a frame decodes each block into
//! zstd's own window buffer and then copies it out; decoding in one pass straight into our
//! buffer skips that copy. So a frame is first decoded in one pass into a region sized from
//! the payload (a warm pooled buffer already holds it), and only if it does not fit there is
//! it decoded again by streaming, which grows the buffer as the output arrives and stops at
//! the limit.

use std::cell::RefCell;

use zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode;
use zstd::zstd_safe::{
    get_error_name, get_frame_content_size, DCtx, InBuffer, OutBuffer, ResetDirective,
};

use super::{next_chunk, CodecError};
use crate::buffer::PooledBuf;

/// The largest region a one-pass decode may use (the pool's default retained size, plus the
/// byte that tells a frame that fits from one cut short). Larger outputs stream: above what
/// the pool keeps, the region would be allocated and zeroed for every batch.
const ONE_PASS_MAX: usize = (8 << 20) + 1;
/// A one-pass region is at least this large, or this many times the payload: zstd frames of
/// text rarely shrink more than 16 times; those that do are streamed.
const ONE_PASS_MIN: usize = 64 << 10;
const ONE_PASS_RATIO: usize = 16;

thread_local! {
    static CONTEXT: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// Decompresses every frame of `payload` into `out`: in one pass when it fits the region
/// chosen (see the module comment), else streamed. A declared content size only sizes the
/// region; the limit is enforced on what is actually produced.
// Kept out of `codec::decompress`, the dispatch that every codec goes through: inlined, the
// stack frame of zstd's two decoding paths would be set up on LZ4 and small batches too.
#[inline(never)]
pub(super) fn decompress(
    payload: &[u8],
    out: &mut PooledBuf,
    limit: usize,
) -> Result<(), CodecError> {
    let declared = match get_frame_content_size(payload) {
        Ok(Some(size)) if size > limit as u64 => return Err(CodecError::TooLarge),
        Ok(Some(size)) => Some(size as usize),
        _ => None,
    };
    let hint = declared.map_or(payload.len().saturating_mul(4), |size| size + 1);
    // The region ends at least one byte past the content (or the limit): a frame that fills
    // it completely may have been cut short, and is streamed instead.
    // From the payload alone, never from what the buffer happens to hold: which decoder runs
    // decides how a corrupt frame is reported (the one-pass decoder and the streaming one name
    // different errors), and that must not depend on the batches decoded before.
    let region = match declared {
        Some(size) => size + 1,
        None => payload
            .len()
            .saturating_mul(ONE_PASS_RATIO)
            .max(ONE_PASS_MIN)
            .min(limit.saturating_add(1)),
    };
    let run = |dctx: &mut DCtx<'static>, out: &mut PooledBuf| {
        // An empty payload is no frame: streaming reports it, one pass would accept it.
        if region <= ONE_PASS_MAX && !payload.is_empty() && one_pass(dctx, payload, out, region)? {
            return Ok(());
        }
        stream(dctx, payload, out, limit, hint)
    };
    // The per-thread context, or a fresh one while the thread is being torn down.
    let result = CONTEXT.try_with(|context| match context.try_borrow_mut() {
        Ok(mut dctx) => Some(run(&mut dctx, out)),
        Err(_) => None,
    });
    match result {
        Ok(Some(done)) => done,
        _ => run(&mut DCtx::create(), out),
    }
}

/// Decodes every frame of `payload` in one pass into a region of `region` bytes; `false`
/// (with `out` as it was) when the content does not fit in `region - 1` bytes.
fn one_pass(
    dctx: &mut DCtx<'static>,
    payload: &[u8],
    out: &mut PooledBuf,
    region: usize,
) -> Result<bool, CodecError> {
    let window = out.writable(region);
    match dctx.decompress(window, payload) {
        Ok(written) if written < region => {
            out.commit(written);
            Ok(true)
        }
        Ok(_) => Ok(false),
        // zstd returns error `e` as `-(e as size_t)` (zstd_errors.h keeps the numbers stable).
        Err(code)
            if code.wrapping_neg() == ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall as usize =>
        {
            Ok(false)
        }
        Err(code) => Err(CodecError::Corrupt(get_error_name(code).to_string())),
    }
}

/// Streams every frame of `payload` into `out`, growing it as output arrives; at most
/// `limit` bytes.
fn stream(
    dctx: &mut DCtx<'static>,
    payload: &[u8],
    out: &mut PooledBuf,
    limit: usize,
    mut hint: usize,
) -> Result<(), CodecError> {
    let corrupt = |code: usize| CodecError::Corrupt(get_error_name(code).to_string());
    dctx.reset(ResetDirective::SessionOnly).map_err(corrupt)?;
    let mut input = InBuffer::around(payload);
    loop {
        let chunk = next_chunk(out.len(), hint, limit);
        if chunk == 0 {
            return Err(CodecError::TooLarge);
        }
        hint = 0;
        let window = &mut out.writable(chunk)[..chunk];
        let mut output = OutBuffer::around(window);
        let before = input.pos();
        let remaining = dctx
            .decompress_stream(&mut output, &mut input)
            .map_err(corrupt)?;
        let produced = output.pos();
        out.commit(produced);
        if out.len() > limit {
            return Err(CodecError::TooLarge);
        }
        let consumed_all = input.pos() == payload.len();
        if remaining == 0 && consumed_all {
            return Ok(());
        }
        if consumed_all && produced < chunk && produced == 0 && input.pos() == before {
            return Err(CodecError::Corrupt("zstd frame ends early".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame as producers write it: streamed, so without a content size.
    fn streamed_frame(content: &[u8]) -> Vec<u8> {
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        std::io::Write::write_all(&mut encoder, content).unwrap();
        let frame = encoder.finish().unwrap();
        assert!(
            matches!(get_frame_content_size(&frame), Ok(None)),
            "test frame has a size"
        );
        frame
    }

    fn text(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| b"order created 42, status pending; "[i % 34] ^ (i / 4096) as u8)
            .collect()
    }

    fn decompress_fresh(payload: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        let mut out = PooledBuf::take();
        decompress(payload, &mut out, limit).map(|()| out.to_vec())
    }

    #[test]
    fn one_pass_fills_a_region_that_fits_and_leaves_the_buffer_alone_when_it_does_not() {
        let content = text(10_000);
        let frame = streamed_frame(&content);
        let mut dctx = DCtx::create();
        let mut out = PooledBuf::take();
        out.extend_from_slice(b"before");
        assert!(!one_pass(&mut dctx, &frame, &mut out, 10_000).unwrap());
        assert_eq!(&out[..], b"before");
        assert!(one_pass(&mut dctx, &frame, &mut out, 10_001).unwrap());
        assert_eq!(&out[6..], &content[..]);
        assert_eq!(out.len(), 6 + content.len());
    }

    #[test]
    fn content_larger_than_the_region_is_streamed_into_a_fresh_buffer_and_a_warm_one() {
        // Compresses far better than ONE_PASS_RATIO and is above ONE_PASS_MIN, so the region is
        // too small and the frame is streamed: into a fresh buffer, and into the same buffer
        // again once it holds the content (the region does not grow with the buffer).
        let content = text(600_000);
        let frame = streamed_frame(&content);
        assert!(frame.len() * ONE_PASS_RATIO < content.len());
        let mut out = PooledBuf::take();
        decompress(&frame, &mut out, 1 << 30).unwrap();
        assert_eq!(&out[..], &content[..]);
        out.clear();
        assert!(out.capacity() > content.len());
        decompress(&frame, &mut out, 1 << 30).unwrap();
        assert_eq!(&out[..], &content[..]);
    }

    #[test]
    fn frames_with_and_without_a_size_and_concatenated_frames_decode_alike() {
        let a = text(70_000);
        let b = text(300);
        let sized = zstd::bulk::compress(&a, 3).unwrap();
        assert!(matches!(get_frame_content_size(&sized), Ok(Some(n)) if n == a.len() as u64));
        assert_eq!(decompress_fresh(&sized, 1 << 20).unwrap(), a);
        let mut two = streamed_frame(&a);
        two.extend_from_slice(&streamed_frame(&b));
        let mut both = a.clone();
        both.extend_from_slice(&b);
        assert_eq!(decompress_fresh(&two, 1 << 20).unwrap(), both);
    }

    #[test]
    fn the_limit_holds_on_both_paths() {
        let content = text(200_000);
        let frame = streamed_frame(&content);
        for limit in [1_000, 100_000, 199_999] {
            assert!(
                matches!(decompress_fresh(&frame, limit), Err(CodecError::TooLarge)),
                "limit {limit}"
            );
        }
        assert_eq!(decompress_fresh(&frame, 200_000).unwrap(), content);
        // A warm buffer, whose region would be large enough but for the limit.
        let mut out = PooledBuf::take();
        decompress(&frame, &mut out, 1 << 20).unwrap();
        out.clear();
        assert!(matches!(
            decompress(&frame, &mut out, 150_000),
            Err(CodecError::TooLarge)
        ));
    }

    #[test]
    fn empty_and_truncated_payloads_are_corrupt() {
        assert!(matches!(
            decompress_fresh(&[], 1 << 20),
            Err(CodecError::Corrupt(_))
        ));
        let frame = streamed_frame(&text(50_000));
        for cut in [1, 4, 5, frame.len() / 2, frame.len() - 1] {
            assert!(
                matches!(
                    decompress_fresh(&frame[..cut], 1 << 20),
                    Err(CodecError::Corrupt(_))
                ),
                "cut at {cut}"
            );
        }
    }
}
