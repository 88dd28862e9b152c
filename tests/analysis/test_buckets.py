"""Question-length buckets."""

from syntaxformer.analysis.buckets import length_bucket, question_words


def test_length_buckets():
    assert question_words("  Who led the   Normans? ") == 4
    assert [length_bucket(n) for n in (1, 5, 6, 10, 11, 20, 21, 40)] == [
        "1-5", "1-5", "6-10", "6-10", "11-15", "16-20", ">20", ">20"]
