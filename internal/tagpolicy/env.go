package tagpolicy

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

// Limits on expressions. The cost is CEL's own measure (about one unit
// per operation and per ten characters a string function reads): every
// expression of every matching policy runs for every pod, so one that
// walks large maps is stopped and the pod refused, not the tagger slowed.
const (
	// CostLimit bounds one evaluation of one expression.
	CostLimit = 10000
	// MaxExpressionLength bounds an expression's text, in bytes (the CRD
	// says the same in characters).
	MaxExpressionLength = 1024
)

// The names of the expressions' variables. CEL reserves "namespace" as an
// identifier, so the namespace is namespaceObject, as in Kubernetes'
// ValidatingAdmissionPolicy.
const (
	VarPod       = "pod"
	VarNamespace = "namespaceObject"
	VarOwner     = "owner"
	VarNode      = "node"
)

// Compiler compiles policies; build one and keep it, as its expression
// environment (the standard library's declarations) is costly to build
// and never changes.
type Compiler struct{ env *cel.Env }

// NewCompiler builds the expression environment.
func NewCompiler() (*Compiler, error) {
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("the expression environment: %w", err)
	}
	return &Compiler{env: env}, nil
}

func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[Pod](), reflect.TypeFor[Namespace](), reflect.TypeFor[Owner](), reflect.TypeFor[Node](),
			ext.ParseStructTags(true)),
		ext.Strings(),
		cel.Variable(VarPod, cel.ObjectType("tagpolicy.Pod")),
		cel.Variable(VarNamespace, cel.ObjectType("tagpolicy.Namespace")),
		cel.Variable(VarOwner, cel.ObjectType("tagpolicy.Owner")),
		cel.Variable(VarNode, cel.ObjectType("tagpolicy.Node")),
		cel.ParserExpressionSizeLimit(MaxExpressionLength),
	)
}

// compileExpression parses and type-checks one expression and plans it
// with the cost limit. The error is CEL's, which points at the place in
// the expression.
func compileExpression(env *cel.Env, expr string) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		if strings.Contains(err.Error(), "reserved identifier: namespace") {
			return nil, fmt.Errorf("%w (the namespace is namespaceObject: CEL reserves the word namespace)", err)
		}
		return nil, err
	}
	if !ast.OutputType().IsExactType(cel.StringType) {
		return nil, &typeError{got: ast.OutputType().String()}
	}
	return env.Program(ast, cel.CostLimit(CostLimit))
}

type typeError struct{ got string }

func (e *typeError) Error() string {
	return "the expression gives a " + e.got + ", not a string: convert it, e.g. string(...)"
}
