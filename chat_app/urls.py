from django.urls import path

from chat_app import stream, views

api_urlpatterns = [
    path("chat/projects", views.ProjectListView.as_view(), name="chat-projects"),
    path("chat/projects/<str:project_id>", views.ProjectDetailView.as_view(), name="chat-project"),
    path("chat/sessions", views.SessionListView.as_view(), name="chat-sessions"),
    path("chat/sessions/<str:cid>/messages", views.MessageListView.as_view(), name="chat-messages"),
    path("chat/sessions/<str:cid>/events", stream.session_events, name="chat-events"),
    path("chat/sessions/<str:cid>/answer", views.AnswerView.as_view(), name="chat-answer"),
    path("chat/sessions/<str:cid>/abort", views.AbortView.as_view(), name="chat-abort"),
]
