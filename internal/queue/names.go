package queue

import "fmt"

// maxUserIDLen bounds a user id.
const maxUserIDLen = 128

// ValidateUserID accepts 1–128 printable ASCII characters without braces or
// white space: braces would move a key to another Redis Cluster slot, and
// anything else is more likely an attack than a name.
func ValidateUserID(id string) error {
	if err := validateName(id, maxUserIDLen); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidUser, err)
	}
	return nil
}

// ValidateQueueName accepts 1–64 of [a-zA-Z0-9_.-], except "." and "..".
func ValidateQueueName(name string) error {
	if len(name) == 0 || len(name) > 64 {
		return fmt.Errorf("%w: must be 1-64 characters", ErrInvalidQueue)
	}
	// The name is a URL path segment (/api/v1/queues/{queue}/…, /q/{queue}),
	// and clients, browsers and proxies remove the dot segments "." and
	// "..": such a queue could be created (as %2E%2E) but not reliably used.
	if name == "." || name == ".." {
		return fmt.Errorf("%w: %q is a URL dot segment", ErrInvalidQueue, name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok {
			return fmt.Errorf("%w: only letters, digits, '-', '_' and '.' are allowed", ErrInvalidQueue)
		}
	}
	return nil
}

func validateName(s string, max int) error {
	if len(s) == 0 {
		return fmt.Errorf("empty")
	}
	if len(s) > max {
		return fmt.Errorf("longer than %d characters", max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || c == '{' || c == '}' {
			return fmt.Errorf("character %q at %d is not allowed", c, i)
		}
	}
	return nil
}
