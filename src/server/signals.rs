//! SIGTERM and SIGINT, waited for by a thread of their own (`sigwait`) rather than by the async
//! runtime's driver: the server notices a signal at once, and ends within the grace period,
//! even while every runtime worker is busy or blocked writing to a client that does not read
//! (a worker polls the driver only between tasks).

use std::time::Duration;

use tokio::sync::watch;

use super::SHUTDOWN_GRACE;

/// After a signal, the process exits at the latest this long after [`SHUTDOWN_GRACE`], even if
/// the server could not finish by itself (the runtime's own timer fires late when its workers
/// are stuck): 1 s. Any duration above 0 works; it only adds to a shutdown the grace did not
/// end. Source: commit fe7dfbd, chosen, not measured.
pub const EXIT_BACKSTOP: Duration = Duration::from_secs(1);

/// The shutdown signals, once [`install`]ed.
pub struct Signals {
    received: watch::Receiver<bool>,
}

impl Signals {
    /// Completes once SIGTERM or SIGINT has come (at once if one came before).
    pub async fn received(mut self) {
        if self.received.wait_for(|got| *got).await.is_err() {
            // The waiting thread is gone without a signal: none will come.
            std::future::pending::<()>().await;
        }
    }
}

/// Block SIGTERM and SIGINT in the calling thread, and so in every thread it starts later, and
/// start the thread that waits for them. Call it first in `main`, before any other thread
/// exists: a thread started earlier would still take the signal's default action (exit at
/// once).
///
/// After the first signal that thread also watches the clock: [`SHUTDOWN_GRACE`] plus
/// [`EXIT_BACKSTOP`] later, it ends the process if the server has not.
///
/// # Errors
/// When the signal mask cannot be set or the thread cannot be started.
#[cfg(unix)]
pub fn install() -> std::io::Result<Signals> {
    let (tx, received) = watch::channel(false);
    // SAFETY: `set` is a local sigset_t, initialised by sigemptyset before use; the calls only
    // read and write it and the calling thread's signal mask.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        set
    };
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut signal: libc::c_int = 0;
            // SAFETY: `set` is initialised above and blocked in this thread (inherited), as
            // sigwait requires; `signal` is a valid out-pointer.
            while unsafe { libc::sigwait(&set, &mut signal) } != 0 {}
            let _ = tx.send(true);
            std::thread::sleep(SHUTDOWN_GRACE + EXIT_BACKSTOP);
            tracing::error!(
                signal,
                "shutdown did not finish within the grace period; exiting without it"
            );
            std::process::exit(0);
        })?;
    Ok(Signals { received })
}

/// Ctrl-C, where there are no Unix signals; no backstop.
///
/// # Errors
/// Never.
#[cfg(not(unix))]
pub fn install() -> std::io::Result<Signals> {
    let (tx, received) = watch::channel(false);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                && rt.block_on(tokio::signal::ctrl_c()).is_ok()
            {
                let _ = tx.send(true);
            }
        })?;
    Ok(Signals { received })
}
