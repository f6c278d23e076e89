//! What `krec mirror`, `krec backup` and `krec restore` share when they run: one async
//! runtime of two workers, SIGTERM or Ctrl-C as the way to stop (the pipeline commits what it
//! carries first), and the exit status.

use std::future::Future;
use std::process::ExitCode;

use crate::corrupt::SKIPPED_EXIT_CODE;
use crate::Error;

/// Runs `work` (which says how many records it had to leave behind: lost or skipped) and
/// turns its outcome into the exit status: 0, 3 when records were left behind, else the
/// error's code after `krec COMMAND: ` and the error as `show` puts it.
pub(crate) fn run_copy(
    command: &str,
    work: impl Future<Output = Result<u64, Error>>,
    show: fn(&Error) -> String,
) -> ExitCode {
    crate::cluster::init_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(work),
        Err(source) => Err(Error::Io {
            context: "starting the async runtime".to_owned(),
            source,
        }),
    };
    match outcome {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(SKIPPED_EXIT_CODE),
        Err(error) => {
            eprintln!("krec {command}: {}", show(&error));
            ExitCode::from(error.exit_code())
        }
    }
}

/// Completes on SIGTERM or Ctrl-C.
pub(crate) fn terminate_signal() -> Result<impl Future<Output = ()>, Error> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).map_err(|source| Error::Io {
        context: "listening for SIGTERM".to_owned(),
        source,
    })?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    })
}
