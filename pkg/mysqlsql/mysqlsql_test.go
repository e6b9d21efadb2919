package mysqlsql

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/dbcontroller/database-controller/pkg/login"
)

func TestRefusal(t *testing.T) {
	denied := &mysql.MySQLError{Number: 1045, SQLState: [5]byte{'2', '8', '0', '0', '0'}, Message: "Access denied for user 'root'@'10.88.0.1' (using password: YES)"}
	var refused *login.RefusedError
	if err := refusal(fmt.Errorf("connecting: %w", denied)); !errors.As(err, &refused) || refused.Message != denied.Message {
		t.Errorf("refusal(access denied) = %v, want a RefusedError with the server's words", err)
	}
	for _, err := range []error{
		&mysql.MySQLError{Number: 1049, Message: "Unknown database 'orders'"},
		errors.New("dial tcp 10.88.0.5:3306: connect: connection refused"),
	} {
		if got := refusal(err); errors.As(got, &refused) || got != err {
			t.Errorf("refusal(%v) = %v, want it unchanged: it says nothing of the credentials", err, got)
		}
	}
}
