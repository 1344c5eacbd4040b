package sdk

// RecordFault marks err, returned by Write with n, as the fault of records[n] itself (bad data, a constraint): only it is nacked, with err, and records[n+1:] go to a following Write.
func RecordFault(err error) error {
	if err == nil {
		return nil
	}
	return recordFault{err}
}

// Retryable marks err, returned by Write with n, as a failure of the system (connection, timeout, deadlock): records[n:] were not written and are retried.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return retryable{err}
}

// IsRecordFault reports whether err, or an error it wraps, was marked by [RecordFault].
func IsRecordFault(err error) bool {
	for err != nil {
		if f, ok := err.(interface{ RecordFault() bool }); ok && f.RecordFault() {
			return true
		}
		err = unwrapOne(err)
	}
	return false
}

// IsRetryable reports whether err, or an error it wraps, was marked by [Retryable].
func IsRetryable(err error) bool {
	for err != nil {
		if r, ok := err.(interface{ Retryable() bool }); ok && r.Retryable() {
			return true
		}
		err = unwrapOne(err)
	}
	return false
}

func unwrapOne(err error) error {
	if u, ok := err.(interface{ Unwrap() error }); ok {
		return u.Unwrap()
	}
	return nil
}

type recordFault struct{ err error }

func (e recordFault) Error() string     { return e.err.Error() }
func (e recordFault) Unwrap() error     { return e.err }
func (e recordFault) RecordFault() bool { return true }

type retryable struct{ err error }

func (e retryable) Error() string   { return e.err.Error() }
func (e retryable) Unwrap() error   { return e.err }
func (e retryable) Retryable() bool { return true }
