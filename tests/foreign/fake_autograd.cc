// fake_autograd.cc: torch::autograd's current node as libtorch has it, for
// test_torch.c's node mode: a Node that derives from
// std::enable_shared_from_this, with a virtual destructor and its sequence
// number first, and get_current_node() returning a std::shared_ptr<Node> from
// a thread-local, so that record/torch.c calls real C++ through its C view of
// the ABI (a struct returned through memory; the control block's use count).
#include <cstdint>
#include <memory>

namespace torch {
namespace autograd {

struct Node : std::enable_shared_from_this<Node> {
	explicit Node(uint64_t seq) : sequence_nr_(seq) {}
	virtual ~Node() = default;
	uint64_t sequence_nr_;
	uint64_t topological_nr_ = 7;
};

static thread_local std::shared_ptr<Node> current;

std::shared_ptr<Node> get_current_node()
{
	return current;
}

} // namespace autograd
} // namespace torch

using torch::autograd::Node;

extern "C" {

void *fake_node_new(uint64_t seq)
{
	return new std::shared_ptr<Node>(std::make_shared<Node>(seq));
}

void fake_node_free(void *node)
{
	delete static_cast<std::shared_ptr<Node> *>(node);
}

void fake_node_set(void *node)
{
	if (node)
		torch::autograd::current = *static_cast<std::shared_ptr<Node> *>(node);
	else
		torch::autograd::current.reset();
}

long fake_node_use_count(void *node)
{
	return static_cast<std::shared_ptr<Node> *>(node)->use_count();
}

void *fake_get_current_node(void)
{
	return reinterpret_cast<void *>(&torch::autograd::get_current_node);
}

} // extern "C"
