package e2eutil

import (
	"errors"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func IsNotFound(err error) bool {
	var nso *thriftgen.NoSuchObjectException
	return errors.As(err, &nso)
}

func Contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
