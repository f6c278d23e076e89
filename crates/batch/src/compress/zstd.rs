//! zstd: one frame per batch, from one compression context per thread.

use std::cell::RefCell;

use zstd::zstd_safe::{compress_bound, get_error_name, CCtx, CParameter};

use crate::buffer::PooledBuf;
use crate::{Compression, Error};

thread_local! {
    static CONTEXT: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
}

fn failed(code: usize) -> Error {
    Error::CompressionFailed {
        codec: Compression::Zstd,
        reason: get_error_name(code),
    }
}

/// Appends `input` as one zstd frame at `level` to `out`.
pub(super) fn compress(input: &[u8], level: i32, out: &mut PooledBuf) -> Result<(), Error> {
    let run = |cctx: &mut CCtx<'static>, out: &mut PooledBuf| {
        cctx.set_parameter(CParameter::CompressionLevel(level))
            .map_err(failed)?;
        let region = out.writable(compress_bound(input.len()));
        let written = cctx.compress2(region, input).map_err(failed)?;
        out.commit(written);
        Ok(())
    };
    let kept = CONTEXT.try_with(|context| match context.try_borrow_mut() {
        Ok(mut cctx) => Some(run(&mut cctx, out)),
        Err(_) => None,
    });
    match kept {
        Ok(Some(done)) => done,
        _ => run(&mut CCtx::create(), out),
    }
}
