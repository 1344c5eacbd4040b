package config

import "strings"

// problems is what [Parse] returns for a configuration with anything
// wrong: each problem, as errors.Join keeps them, so that errors.Is and
// errors.As find every [*ParameterError] among them. Its message reads on
// one line, the problems separated by "; ", because Conduit logs a
// plugin's error as one field of one line, where a newline shows as \n.
type problems []error

// joinProblems returns errs as problems, without the nil ones, and with
// those that only join others (errors.Join's, such as a Validate method
// returns) replaced by their parts; nil if none is left.
func joinProblems(errs ...error) error {
	var p problems
	for _, err := range errs {
		p = p.add(err)
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// add returns p with err added, or its parts if err only joins them.
func (p problems) add(err error) problems {
	if err == nil {
		return p
	}
	if parts := joined(err); parts != nil {
		for _, part := range parts {
			p = p.add(part)
		}
		return p
	}
	return append(p, err)
}

// joined returns the errors err joins if its message is nothing but
// theirs, one a line, as errors.Join's is (or problems', one after the
// other), else nil: an error that wraps several with words of its own, as
// fmt.Errorf("%w and %w") does, is one problem.
func joined(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	parts := j.Unwrap()
	if _, ok := err.(problems); ok {
		return parts
	}
	msgs := make([]string, 0, len(parts))
	for _, part := range parts {
		if part != nil {
			msgs = append(msgs, part.Error())
		}
	}
	if err.Error() != strings.Join(msgs, "\n") {
		return nil
	}
	return parts
}

func (p problems) Error() string {
	msgs := make([]string, len(p))
	for i, err := range p {
		// A part that wraps a joined error still carries its newlines.
		msgs[i] = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (p problems) Unwrap() []error { return p }
