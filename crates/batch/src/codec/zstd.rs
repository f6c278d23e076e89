//! zstd frames, with or without a content size, through one decompression context per thread.

use std::cell::RefCell;

use zstd::zstd_safe::{
    get_error_name, get_frame_content_size, DCtx, InBuffer, OutBuffer, ResetDirective,
};

use super::{next_chunk, CodecError};
use crate::buffer::PooledBuf;

thread_local! {
    static CONTEXT: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// Streams every frame of `payload` into `out`: a declared content size only sizes the first
/// request; the limit is enforced on what is actually produced.
// Kept out of `codec::decompress`: inlined, its large stack frame (gzip's inflate state
// alone is tens of KiB) made every call probe and touch that stack, LZ4 and small batches too.
#[inline(never)]
pub(super) fn decompress(
    payload: &[u8],
    out: &mut PooledBuf,
    limit: usize,
) -> Result<(), CodecError> {
    let hint = match get_frame_content_size(payload) {
        Ok(Some(size)) if size > limit as u64 => return Err(CodecError::TooLarge),
        Ok(Some(size)) => size as usize + 1,
        _ => payload.len().saturating_mul(4),
    };
    fn run(
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
    // The per-thread context, or a fresh one while the thread is being torn down.
    CONTEXT
        .try_with(|context| match context.try_borrow_mut() {
            Ok(mut dctx) => run(&mut dctx, payload, out, limit, hint),
            Err(_) => run(&mut DCtx::create(), payload, out, limit, hint),
        })
        .unwrap_or_else(|_| run(&mut DCtx::create(), payload, out, limit, hint))
}
