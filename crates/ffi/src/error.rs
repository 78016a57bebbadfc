//! The crate's one error type, [`FfiError`]: a [`Status`] and a message,
//! and how the engine's errors map onto it.

use std::fmt;

use ubt_engine::{CodeError, Error as StoreError, ProofError};

use crate::status::Status;

/// A failed call: the status code it returns and the message the caller
/// reads with `ubt_last_error_message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FfiError {
    status: Status,
    message: String,
}

impl FfiError {
    /// An error with `status` and `message`.
    pub(crate) fn new(status: Status, message: impl Into<String>) -> FfiError {
        FfiError {
            status,
            message: message.into(),
        }
    }

    /// [`Status::InvalidArgument`] with `message`.
    pub(crate) fn invalid(message: impl Into<String>) -> FfiError {
        FfiError::new(Status::InvalidArgument, message)
    }

    /// [`Status::NullPointer`] for the argument called `name`.
    pub(crate) fn null(name: &str) -> FfiError {
        FfiError::new(Status::NullPointer, format!("{name} is a null pointer"))
    }

    /// The status of the error.
    pub(crate) fn status(&self) -> Status {
        self.status
    }

    /// The message of the error.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for FfiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FfiError {}

/// The status an engine error maps to.
fn store_status(error: &StoreError) -> Status {
    match error {
        StoreError::Io { .. } => Status::Io,
        StoreError::Corrupted { .. } => Status::Corrupted,
        StoreError::Poisoned(_) => Status::Poisoned,
        StoreError::NotFound(_) => Status::NotFound,
        StoreError::NotADatabase(_) | StoreError::InvalidPath(_) | StoreError::AlreadyExists(_) => {
            Status::NotADatabase
        }
        StoreError::Locked(_) => Status::Locked,
        StoreError::InvalidOptions(_)
        | StoreError::GroupDepthMismatch { .. }
        | StoreError::BucketBytesMismatch { .. } => Status::InvalidOptions,
        StoreError::UnsupportedVersion { .. } => Status::UnsupportedVersion,
        StoreError::ReadOnly(_) => Status::ReadOnly,
        StoreError::UnknownRoot(_) => Status::UnknownRoot,
        StoreError::RevertTooDeep { .. } => Status::RevertTooDeep,
        StoreError::SnapshotReverted(_) => Status::SnapshotReverted,
        StoreError::BlockTooLarge { .. } | StoreError::RecordTooLarge { .. } => {
            Status::BlockTooLarge
        }
        StoreError::OwnersRequired => Status::OwnersRequired,
        StoreError::UnsortedInput { .. } => Status::InvalidArgument,
        _ => Status::Internal,
    }
}

impl From<StoreError> for FfiError {
    fn from(error: StoreError) -> FfiError {
        FfiError::new(store_status(&error), error.to_string())
    }
}

impl From<CodeError> for FfiError {
    fn from(error: CodeError) -> FfiError {
        match error {
            CodeError::Source(error) => FfiError::from(error),
            CodeError::MissingChunk(missing) => {
                FfiError::new(Status::MissingCodeChunk, missing.to_string())
            }
        }
    }
}

impl From<ProofError> for FfiError {
    fn from(error: ProofError) -> FfiError {
        FfiError::new(Status::ProofRejected, format!("proof rejected: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_map_to_their_codes() {
        let cases = [
            (StoreError::NotFound("d".into()), Status::NotFound),
            (StoreError::Locked("d".into()), Status::Locked),
            (StoreError::ReadOnly("d".into()), Status::ReadOnly),
            (StoreError::UnknownRoot([1; 32]), Status::UnknownRoot),
            (
                StoreError::SnapshotReverted([1; 32]),
                Status::SnapshotReverted,
            ),
            (StoreError::OwnersRequired, Status::OwnersRequired),
            (StoreError::Poisoned("w".into()), Status::Poisoned),
            (
                StoreError::RevertTooDeep {
                    root: [2; 32],
                    depth: 3,
                },
                Status::RevertTooDeep,
            ),
            (
                StoreError::GroupDepthMismatch {
                    stored: 6,
                    requested: 4,
                },
                Status::InvalidOptions,
            ),
            (
                StoreError::io("reading")(std::io::Error::other("disk")),
                Status::Io,
            ),
            (
                StoreError::corrupted(ubt_engine::Structure::Bucket, "data@0", "crc"),
                Status::Corrupted,
            ),
        ];
        for (error, status) in cases {
            let message = error.to_string();
            let mapped = FfiError::from(error);
            assert_eq!(mapped.status(), status);
            assert_eq!(mapped.message(), message);
        }
    }

    #[test]
    fn proof_errors_are_rejections_with_the_reason() {
        let mapped = FfiError::from(ProofError::RootMismatch);
        assert_eq!(mapped.status(), Status::ProofRejected);
        assert!(mapped.message().contains("root mismatch"));
    }
}
