package colossus

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// readOwnerOnlyFile reads a regular file owned by this user with no group or other
// permission bits, without following a final symbolic link. It opens non-blocking, so a
// FIFO or device planted in place of the file is refused instead of hanging the caller.
func readOwnerOnlyFile(path string, limit int64, sentinel error) ([]byte, error) {
	name := filepath.Base(path)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, withCause(newError(sentinel, fileReason(sentinel), "%s does not exist", name).withMeta("field", name), err)
		}
		return nil, withCause(newError(sentinel, fileReason(sentinel), "%s cannot be opened (or is a symbolic link)", name).withMeta("field", name), err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, newError(sentinel, fileReason(sentinel), "%s cannot be inspected", name).withMeta("field", name)
	}
	if !info.Mode().IsRegular() {
		return nil, newError(sentinel, fileReason(sentinel), "%s is not a regular file", name).withMeta("field", name)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, newError(sentinel, fileReason(sentinel), "%s is not owned by the current user", name).withMeta("field", name)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, newError(sentinel, fileReason(sentinel), "%s is readable or writable by others (mode must be 0600)", name).withMeta("field", name)
	}
	if info.Size() > limit {
		return nil, newError(sentinel, fileReason(sentinel), "%s is larger than %d bytes", name, limit).withMeta("field", name)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, newError(sentinel, fileReason(sentinel), "%s cannot be read", name).withMeta("field", name)
	}
	if int64(len(data)) > limit {
		return nil, newError(sentinel, fileReason(sentinel), "%s is larger than %d bytes", name, limit).withMeta("field", name)
	}
	return data, nil
}

// checkPrivateDir requires a real directory (not a link) owned by this user, mode 0700.
func checkPrivateDir(dir string, sentinel error, what string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return withCause(newError(sentinel, fileReason(sentinel), "%s does not exist", what), err)
	}
	if !info.IsDir() {
		return newError(sentinel, fileReason(sentinel), "%s is not a directory", what)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return newError(sentinel, fileReason(sentinel), "%s is not owned by the current user", what)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return newError(sentinel, fileReason(sentinel), "%s is open to others (mode must be 0700)", what)
	}
	return nil
}

// withCause keeps the I/O error under e, so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, fs.ErrPermission) work on the SDK's error (paths are not secret).
func withCause(e *Error, cause error) *Error {
	e.cause = cause
	return e
}

// fileReason is the reason of a refused file or folder, by what it was meant to hold.
func fileReason(sentinel error) string {
	switch sentinel {
	case ErrDescriptor:
		return ReasonDescriptorInvalid
	case ErrCertificate:
		return ReasonCertificateInvalid
	case ErrSidecar:
		return ReasonStateDirInvalid
	}
	return ReasonFieldInvalid
}
