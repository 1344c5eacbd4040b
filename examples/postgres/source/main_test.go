package source

import (
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
)

var server *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &server) }
