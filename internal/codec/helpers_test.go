package codec

// ToEntity and FromEntity are tablekit's, for the tests that check the
// codec through them: Encode and Decode naming their operation.

func ToEntity[T any](v T) (Entity, error) {
	e, err := Encode(v)
	return e, WithOp("ToEntity", err)
}

func FromEntity[T any](e Entity) (T, error) {
	v, err := Decode[T](e)
	return v, WithOp("FromEntity", err)
}
