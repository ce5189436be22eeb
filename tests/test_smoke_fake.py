"""The fake pipeline end to end: index the seed corpus with the fake embedder, answer with a
scripted model, check citations."""

from rag.chat.answer import answer


def test_answer_end_to_end_with_fakes(fake_index, scripted):
    settings, retriever = fake_index
    scripted.enqueue("Hybrid genetic search is refined with a fine-tuned LLM [1]. Something else [9].")
    ans = answer("crossover operators for CVRP hybrid genetic search", retriever=retriever,
                 generator=scripted, settings=settings)
    assert ans.hits and ans.hits[0].id == "aITKXFeivk"
    assert "[9]" not in ans.text
    assert [c.paper.id for c in ans.citations][:1] == ["aITKXFeivk"]
