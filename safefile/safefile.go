package safefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DefaultMaxSize is the size cap of a read when [ReadOptions.MaxSize] is
// zero.
const DefaultMaxSize = 4 << 20

// ErrNotRegular is matched (with [errors.Is]) by a [*NotRegularError].
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is matched (with [errors.Is]) by a [*TooLargeError].
var ErrTooLarge = errors.New("file too large")

// ErrNotPrivate is matched (with [errors.Is]) by the error of a read with
// [ReadOptions.Private] of a file that others may read or write.
var ErrNotPrivate = errors.New("file is readable or writable by others")

// NotRegularError is the error for a path that names something other
// than a regular file: a FIFO, a socket, a device, a directory, or (with
// [ReadOptions.NoFollow]) a symbolic link.
type NotRegularError struct {
	Path string
	// Kind names what the path is: "fifo", "socket", "device",
	// "directory", "symlink" or "irregular".
	Kind string
}

func (e *NotRegularError) Error() string {
	return e.Path + ": not a regular file (" + e.Kind + ")"
}

// Is reports whether target is [ErrNotRegular].
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// TooLargeError is the error for a file over the size cap of a read.
type TooLargeError struct {
	Path string
	// Size is the file's size as fstat saw it, or -1 when the file grew
	// past Limit while it was read.
	Size  int64
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s: grew past the limit of %d bytes while being read", e.Path, e.Limit)
	}
	return fmt.Sprintf("%s: %d bytes; the limit is %d", e.Path, e.Size, e.Limit)
}

// Is reports whether target is [ErrTooLarge].
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ReadOptions tune [ReadFile] and [Open]. The zero value follows
// symbolic links, caps a read at [DefaultMaxSize] and accepts any
// permissions.
type ReadOptions struct {
	// MaxSize is the largest file read, in bytes. Zero means
	// [DefaultMaxSize]; a negative value means no cap. [Open] checks it
	// against the size fstat reports.
	MaxSize int64
	// NoFollow refuses a path whose last element is a symbolic link
	// (O_NOFOLLOW), for files voltmcp itself writes.
	NoFollow bool
	// Private refuses a file whose permissions let others than its owner
	// read or write it (mode & 0o077 != 0), for files that hold secrets.
	Private bool
}

func (o *ReadOptions) maxSize() int64 {
	switch {
	case o == nil || o.MaxSize == 0:
		return DefaultMaxSize
	case o.MaxSize < 0:
		return -1
	}
	return o.MaxSize
}

// Open opens path for reading without blocking, and returns the open
// file with what fstat says of it, once it is known to be a regular file
// within the options' size cap. Something other than a regular file is
// refused by a stat before the open, and by fstat after it. A missing path is an error that matches
// [fs.ErrNotExist]. The caller closes the file.
func Open(path string, opts *ReadOptions) (*os.File, fs.FileInfo, error) {
	var o ReadOptions
	if opts != nil {
		o = *opts
	}
	// A device is refused before it is opened, since opening some has
	// effects of its own; the fstat below catches a file swapped in
	// between.
	stat := os.Stat
	if o.NoFollow {
		stat = os.Lstat
	}
	if info, err := stat(path); err == nil && !info.Mode().IsRegular() {
		return nil, nil, &NotRegularError{Path: path, Kind: kindOf(info.Mode())}
	}
	f, info, err := regular(path)(openNonblock(path, o.NoFollow))
	if err != nil {
		return nil, nil, err
	}
	if limit := o.maxSize(); limit >= 0 && info.Size() > limit {
		f.Close()
		return nil, nil, &TooLargeError{Path: path, Size: info.Size(), Limit: limit}
	}
	if o.Private && info.Mode().Perm()&0o077 != 0 {
		f.Close()
		return nil, nil, fmt.Errorf("%s: mode %#o: %w", path, info.Mode().Perm(), ErrNotPrivate)
	}
	return f, info, nil
}

// OpenAppend opens the regular file at path for appending (O_RDWR and
// O_APPEND), creating it with mode perm when missing, without blocking
// and without following a link: a FIFO, device, socket, directory or
// symlink in its place is a [*NotRegularError] at once (checked by
// fstat after the open), where a blocking open or write would wait for
// ever or write somewhere else. It returns what fstat says of the file;
// the caller closes it.
func OpenAppend(path string, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	return regular(path)(openAppend(path, perm))
}

// regular returns the check that a file just opened at path is a
// regular file, by fstat: it takes the open's result and returns the
// file with what fstat says of it, or closes it and returns a
// [*NotRegularError].
func regular(path string) func(*os.File, error) (*os.File, fs.FileInfo, error) {
	return func(f *os.File, err error) (*os.File, fs.FileInfo, error) {
		if err != nil {
			return nil, nil, err
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		if !info.Mode().IsRegular() {
			f.Close()
			return nil, nil, &NotRegularError{Path: path, Kind: kindOf(info.Mode())}
		}
		return f, info, nil
	}
}

// ReadFile reads the whole of the regular file at path, as [Open] opens
// it, and at most the size cap: a file that grows past it while being
// read is a [*TooLargeError] with Size -1. A missing path is an error
// that matches [fs.ErrNotExist]; an existing empty file reads as a
// non-nil empty slice.
func ReadFile(path string, opts *ReadOptions) ([]byte, error) {
	f, info, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	limit := opts.maxSize()
	size := info.Size()
	// One allocation for a file that does not change while it is read;
	// one byte more to see that it grew.
	buf := make([]byte, 0, size+1)
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit+1)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if limit >= 0 && int64(len(buf)) > limit {
		return nil, &TooLargeError{Path: path, Size: -1, Limit: limit}
	}
	return buf, nil
}

// kindOf names the type of a file that is not regular.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "irregular"
}

// WriteOptions tune [WriteFile] and [Update]. The zero value writes mode
// 0600, syncs, and creates missing directories with mode 0700.
type WriteOptions struct {
	// Mode is the permission of the file written. Zero means 0600.
	Mode fs.FileMode
	// KeepMode gives a file that [Update] replaces the permissions the
	// old file had, rather than Mode.
	KeepMode bool
	// Read tunes how [Update] reads the old file. Nil means the zero
	// [ReadOptions].
	Read *ReadOptions
	// Written, for [Update], runs after the new bytes are written and
	// before the lock is let go, with the old bytes (nil when there was
	// no file) and the new: for a step that must happen under the same
	// lock, such as recording the content written. Its error is Update's.
	// It is not called when nothing is written. Nil means none.
	Written func(old, written []byte) error
	// LockFile is the lock file [Update] holds (see [LockAt]), for a
	// file beside which voltmcp must leave nothing. Every writer of the
	// file must name the same one. Empty means path + ".lock".
	LockFile string
}

func (o *WriteOptions) mode() fs.FileMode {
	if o == nil || o.Mode == 0 {
		return 0o600
	}
	return o.Mode.Perm()
}

// WriteFile replaces path with data atomically: a temporary file beside
// path, written, given its mode, synced and renamed over path, then the
// directory synced; a reader or a crash sees the old file or the new one,
// never a mix. Missing directories are created 0700. Errors name path.
func WriteFile(path string, data []byte, opts *WriteOptions) error {
	return writeFile(path, data, opts.mode())
}

func writeFile(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, Pathless(err))
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, Pathless(err))
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(mode); err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, Pathless(err))
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, Pathless(err))
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename durable where the platform allows
		_ = d.Close()
	}
	return nil
}

// Update changes the file at path with edit, serialized with every other
// Update (and [Lock]) of the same path, in this process or another: it
// takes an exclusive lock on path + ".lock" (created 0600 beside path,
// and left there), or on [WriteOptions.LockFile] when set, reads the
// file inside the lock, calls edit with its bytes (nil when the file does
// not exist), and writes what edit returns with [WriteFile] (then calls
// [WriteOptions.Written]) before it lets go. When edit returns nil bytes
// or an error, the file is left as it was; the error is returned as edit
// gave it. Waiting for the lock ends with ctx.
func Update(ctx context.Context, path string, opts *WriteOptions, edit func(old []byte) ([]byte, error)) error {
	lp := path + ".lock"
	if opts != nil && opts.LockFile != "" {
		lp = opts.LockFile
	}
	unlock, err := lock(ctx, path, lp)
	if err != nil {
		return err
	}
	defer unlock()
	var ro *ReadOptions
	if opts != nil {
		ro = opts.Read
	}
	mode := opts.mode()
	old, err := ReadFile(path, ro)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return err
	case opts != nil && opts.KeepMode:
		if info, err := os.Stat(path); err == nil {
			mode = info.Mode().Perm()
		}
	}
	data, err := edit(old)
	if err != nil || data == nil {
		return err
	}
	if err := writeFile(path, data, mode); err != nil {
		return err
	}
	if opts != nil && opts.Written != nil {
		return opts.Written(old, data)
	}
	return nil
}

// Lock takes an exclusive lock on path + ".lock", creating it (0600, and
// missing directories 0700) if needed, waiting until it is free or ctx
// ends, and returns the function that releases it. Processes that lock
// the same path run one at a time; the lock file stays after release,
// since removing it would let two processes hold locks on two different
// files of one name. It is what [Update] holds; use it directly for a
// read-modify-write that does more than rewrite one file.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	return lock(ctx, path, path+".lock")
}

// LockAt is [Lock] on the lock file lockFile itself, wherever it is: for
// a file beside which nothing may be left, whose lock lives elsewhere
// (voltmcp keeps those of config files in its agent directory). The
// processes that mean to serialize must all name the same lock file.
func LockAt(ctx context.Context, lockFile string) (unlock func(), err error) {
	return lock(ctx, lockFile, lockFile)
}

// lock takes the lock on the lock file lp for path, which errors name.
func lock(ctx context.Context, path, lp string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(lp), 0o700); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, Pathless(err))
	}
	f, err := openLockFile(lp)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, Pathless(err))
	}
	if f == nil {
		return func() {}, nil
	}
	if err := LockFile(ctx, f, nil); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		UnlockFile(f)
		f.Close()
	}, nil
}

// lockDelays are the first and longest waits between tries of a lock
// that is held.
const (
	firstLockDelay = 50 * time.Microsecond
	maxLockDelay   = 10 * time.Millisecond
)

// Pathless returns err without the path it names, for a caller whose
// message names the file already (or must not show the path): the
// underlying error of an [*fs.PathError], and the reason of a
// [*NotRegularError] or [*TooLargeError] ("not a regular file (fifo)"),
// which still matches [ErrNotRegular] or [ErrTooLarge]. Any other error
// is returned as it is.
func Pathless(err error) error {
	var nr *NotRegularError
	var tl *TooLargeError
	var pe *fs.PathError
	switch {
	case errors.As(err, &nr):
		return &reason{"not a regular file (" + nr.Kind + ")", ErrNotRegular}
	case errors.As(err, &tl) && tl.Size < 0:
		return &reason{fmt.Sprintf("grew past the limit of %d bytes while being read", tl.Limit), ErrTooLarge}
	case errors.As(err, &tl):
		return &reason{fmt.Sprintf("%d bytes; the limit is %d", tl.Size, tl.Limit), ErrTooLarge}
	case errors.As(err, &pe):
		return pe.Err
	}
	return err
}

// reason is an error of Pathless: a message, matching a sentinel.
type reason struct {
	msg string
	is  error
}

func (r *reason) Error() string        { return r.msg }
func (r *reason) Is(target error) bool { return target == r.is }
